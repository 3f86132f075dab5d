// fake-skills-server.mjs is a deliberately tiny MCP server (streamable HTTP,
// JSON replies only) that serves one SEP-2640 skill, for the self-test of
// scripts/e2e-inspector-verify.sh. It is a test double for a skills server,
// not a reference: it answers just enough of both eras for
// `mcp-inspector --cli URL --method skills/list --verify`.
//
//   node fake-skills-server.mjs PORT good|bad-digest
//
// bad-digest advertises, in skills/list, the sha256 of bytes other than those
// resources/read serves (same size), which a verifying client must refuse
// (inspector exit code 7). It listens on 127.0.0.1 only, path /mcp, and exits
// on SIGTERM.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';

const [portArg, mode = 'good'] = process.argv.slice(2);
const SKILL_URI = 'skill://fake-skill/SKILL.md';
const SKILL_MD = '---\nname: fake-skill\ndescription: A skill served by the e2e test double.\n---\n\n# Fake skill\n\nNothing to see.\n';
const served = Buffer.from(SKILL_MD, 'utf8');
const advertised = mode === 'bad-digest' ? Buffer.from(SKILL_MD.replace('Nothing', 'Somethin'), 'utf8') : served;
const digest = 'sha256:' + createHash('sha256').update(advertised).digest('hex');
const SKILLS_EXT = 'io.modelcontextprotocol/skills';
const capabilities = { resources: {}, extensions: { [SKILLS_EXT]: {} } };
const serverInfo = { name: 'fake-skills-server', version: '0.0.0' };
const cache = { ttlMs: 0, cacheScope: 'public' };

function entry() {
  return {
    uri: SKILL_URI,
    frontmatter: { name: 'fake-skill', description: 'A skill served by the e2e test double.' },
    resources: [{ uri: SKILL_URI, digest, size: served.length }],
  };
}

// answer returns [result, error] for one request.
function answer(method, params, modern) {
  const done = (r) => [modern ? { resultType: 'complete', ...r } : r, null];
  switch (method) {
    case 'initialize':
      return [{ protocolVersion: '2025-11-25', capabilities, serverInfo }, null];
    case 'server/discover':
      return done({ supportedVersions: ['2026-07-28', '2025-11-25'], capabilities, serverInfo, ...cache });
    case 'ping':
      return done({});
    case 'skills/list':
      return done({ skills: [entry()], ...cache });
    case 'skills/get':
      if (params?.uri === SKILL_URI) return done({ skill: entry(), ...cache });
      return [null, { code: -32602, message: 'unknown skill' }];
    case 'resources/list':
      return done({ resources: [{ uri: SKILL_URI, name: 'fake-skill', description: 'A skill served by the e2e test double.', mimeType: 'text/markdown' }] });
    case 'resources/read':
      if (params?.uri === SKILL_URI) return done({ contents: [{ uri: SKILL_URI, mimeType: 'text/markdown', text: SKILL_MD }], ...cache });
      return [null, { code: -32602, message: 'resource not found' }];
    default:
      return [null, { code: -32601, message: `method not found: ${method}` }];
  }
}

const server = createServer((req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.writeHead(404).end(); return; }
  if (req.method !== 'POST') { res.writeHead(405, { Allow: 'POST' }).end(); return; }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let msg;
    try { msg = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }));
      return;
    }
    if (msg.id === undefined) { res.writeHead(202).end(); return; } // notification or response
    const modern = Boolean(msg.params?._meta?.['io.modelcontextprotocol/protocolVersion']);
    const [result, error] = answer(msg.method, msg.params, modern);
    const body = error ? { jsonrpc: '2.0', id: msg.id, error } : { jsonrpc: '2.0', id: msg.id, result };
    const status = error && error.code === -32601 && modern ? 404 : 200;
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  });
});
server.listen(Number(portArg), '127.0.0.1', () => console.error(`fake-skills-server (${mode}) on http://127.0.0.1:${portArg}/mcp`));
process.on('SIGTERM', () => { server.closeAllConnections(); process.exit(0); });
