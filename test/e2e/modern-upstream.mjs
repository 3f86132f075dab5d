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

const handler = createMcpHandler(factory);

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
    const response = await handler.fetch(toRequest(req, Buffer.concat(chunks)));
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
