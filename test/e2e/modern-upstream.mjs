// modern-upstream.mjs is a small dual-era MCP server for the end-to-end
// scripts: the 2026-07-28 revision (server/discover, per-request _meta) and,
// through the SDK's stateless fallback, the 2025-era initialize handshake, on
// one endpoint. server-everything speaks the legacy era only, so without this
// nothing upstream of the sidecar answers a modern client.
//
//   E2E_NPM_DIR=<.tools/e2e-npm> node modern-upstream.mjs PORT
//
// Built on @modelcontextprotocol/server (TypeScript SDK v2, pinned in
// test/e2e/package.json and resolved from E2E_NPM_DIR, since this file lives
// outside that node_modules tree). Serves http://127.0.0.1:PORT/mcp only,
// with two tools (echo, get-sum) and two static resources (a text file and a
// blob), all with fixed content so that two reads compare equal. Exits on
// SIGTERM.
//
//   node modern-upstream.mjs PORT --modern-only
//
// serves the 2026-07-28 revision alone, refusing legacy traffic as that
// revision says a modern-only server does (the legacy front's test peer):
//   - versioning page, Compatibility Matrix, row Legacy/Modern, HTTP: the
//     legacy client's request "is missing the required headers and is rejected
//     per server validation with 400 Bad Request", i.e. a HeaderMismatch
//     (-32020) error (streamable-http page, Server Validation: a required
//     standard header MCP-Protocol-Version, Mcp-Method or Mcp-Name missing);
//   - versioning page: a modern-only server SHOULD name the protocol versions
//     it supports in any error it returns to an initialize request;
//   - streamable-http page, Earlier Streamable HTTP Revisions: GET or DELETE
//     answered 405, an Mcp-Session-Id ignored (never minted or echoed), a
//     Last-Event-ID ignored.
// The SDK's handler runs with legacy: 'reject', so its server/discover lists
// 2026-07-28 only.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const npmDir = process.env.E2E_NPM_DIR;
if (!npmDir) {
  console.error('modern-upstream: set E2E_NPM_DIR to the folder install-e2e-tools.sh filled');
  process.exit(2);
}
const require = createRequire(join(npmDir, 'package.json'));
const { McpServer, createMcpHandler } = require('@modelcontextprotocol/server');
const { z } = require('zod');

const README = '# e2e modern upstream\n\nA fixed text resource, served as text/markdown.\n';
const BLOB = Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff, 0x80, 0x7f, 0x0a]).toString('base64');

function factory() {
  const server = new McpServer({ name: 'e2e-modern-upstream', version: '1.0.0' });
  server.registerTool('echo', {
    description: 'Echoes back the input string',
    inputSchema: z.object({ message: z.string() }),
  }, async ({ message }) => ({ content: [{ type: 'text', text: `Echo: ${message}` }] }));
  server.registerTool('get-sum', {
    description: 'Returns the sum of two numbers',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
  }, async ({ a, b }) => ({ content: [{ type: 'text', text: `The sum of ${a} and ${b} is ${a + b}.` }] }));
  server.registerResource('readme', 'demo://static/readme.md', { mimeType: 'text/markdown', description: 'A fixed text resource' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: README }] }));
  server.registerResource('blob', 'demo://static/blob.bin', { mimeType: 'application/octet-stream', description: 'A fixed binary resource' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: BLOB }] }));
  return server;
}

const modernOnly = process.argv.includes('--modern-only');
const SUPPORTED = ['2026-07-28'];
const handler = createMcpHandler(factory, modernOnly ? { legacy: 'reject' } : undefined);

// legacyRefusal is the modern-only answer to a request without the 2026-07-28
// request metadata (its headers and _meta), or null for one that has them.
function legacyRefusal(req, body) {
  let msg;
  try { msg = JSON.parse(body.toString('utf8')); } catch { return null; } // the SDK answers a parse error
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return null;
  const meta = msg.params && typeof msg.params === 'object' ? msg.params._meta : undefined;
  const bodyVersion = meta && typeof meta === 'object' ? meta['io.modelcontextprotocol/protocolVersion'] : undefined;
  const missing = ['mcp-protocol-version', 'mcp-method'].filter((h) => req.headers[h] === undefined);
  if (msg.method !== 'initialize' && missing.length === 0 && bodyVersion !== undefined) return null;
  const id = msg.id === undefined ? null : msg.id;
  let message = missing.length > 0
    ? `Header mismatch: required header ${missing.join(', ')} missing`
    : 'Header mismatch: request carries no _meta io.modelcontextprotocol/protocolVersion';
  if (msg.method === 'initialize') {
    message = `initialize is not part of MCP ${SUPPORTED.join(', ')}; this server supports only protocol versions ${SUPPORTED.join(', ')} (${message})`;
  }
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32020, message, data: { supported: SUPPORTED } } });
}

// toRequest turns a node:http request with its whole body into a web Request.
function toRequest(req, body) {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) v.forEach((x) => headers.append(k, x));
    else if (v !== undefined) headers.set(k, v);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, {
    method: req.method, headers, body: hasBody ? body : undefined,
  });
}

const http = createServer(async (req, res) => {
  try {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.writeHead(404).end(); return; }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (modernOnly) {
      if (req.method === 'GET' || req.method === 'DELETE') { res.writeHead(405, { Allow: 'POST' }).end(); return; }
      delete req.headers['mcp-session-id'];
      delete req.headers['last-event-id'];
      const refusal = req.method === 'POST' ? legacyRefusal(req, body) : null;
      if (refusal !== null) { res.writeHead(400, { 'Content-Type': 'application/json' }).end(refusal); return; }
    }
    const response = await handler.fetch(toRequest(req, body));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk); // SSE passes event by event
    }
    res.end();
  } catch (err) {
    console.error('modern-upstream:', err);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
const port = Number(process.argv[2]);
http.listen(port, '127.0.0.1', () => console.error(`modern-upstream on http://127.0.0.1:${port}/mcp`));
process.on('SIGTERM', () => { http.closeAllConnections(); process.exit(0); });
