// draft-agents-server.mjs is a small MCP server that serves the agents
// extension (io.modelcontextprotocol/agents) exactly as the Agents WG draft
// "MCP Agent Discovery Extension" (proposals/0000-mcp-agent-discovery-
// extension.md) writes its wire types and examples: AgentCard,
// ListAgentsResult, GetAgentResult (agent is the agent's NAME, a string),
// the CacheableResult fields, and the two error discriminators. It is
// written from the draft's text, not from skills-sidecar's code, so that the
// project's verify and its sidecar are judged against a peer they did not
// shape. No SDK: plain node:http, JSON replies.
//
//   node draft-agents-server.mjs PORT [FAULT]
//
// Serves http://127.0.0.1:PORT/mcp: the 2026-07-28 wire (per-request _meta,
// server/discover) and a stateless legacy initialize. The roster and the
// workflow-agent details are the draft's own examples (plus the
// modelRoutingHint of docs/protocol.md section 4). FAULT breaks one thing on
// purpose; each must make a strict host (and `skills-sidecar verify`) fail:
//   agent-object        agents/get sends the card object as "agent"
//   agent-other-name    agents/get names another agent
//   tool-differs        a tool's description differs from tools/list
//   tool-unlisted       agents/get returns a tool tools/list lacks
//   no-tools            agents/get has no tools array
//   bad-role            modelRoutingHint.role is "xl"
//   vision-string       modelRoutingHint.vision is "false", a string
//   instructions-array  instructions is an array
//   no-ttl              agents/get lacks ttlMs
//   no-cache-scope      agents/get lacks cacheScope
//   no-result-type      agents/get lacks resultType
//   unknown-no-reason   an unknown agent's error has no data.reason
//   unknown-wrong-code  an unknown agent is -32601, not -32602
//   card-no-capabilities  the workflow-agent card lacks capabilities
// Exits on SIGTERM.
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
const fault = process.argv[3] || '';
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node draft-agents-server.mjs PORT [FAULT]');
  process.exit(2);
}

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const CACHE = { ttlMs: 60000, cacheScope: 'private' };

// The draft's tools/list entry, and one more tool no agent uses.
const TOOLS = [
  {
    name: 'list_failed_pipelines',
    description: 'List failed pipelines for a service.',
    inputSchema: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
  },
  {
    name: 'search_advisories',
    description: 'Search security advisories.',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
];

// The draft's agents/list example roster, one card a page.
const CARDS = [
  {
    name: 'workflow-agent',
    description: 'Investigates delivery pipelines and approvals',
    capabilities: ['pipeline failures', 'deployment readiness', 'approval status'],
  },
  {
    name: 'research-agent',
    description: 'Researches vulnerabilities and technical evidence',
    capabilities: ['vulnerability research', 'evidence collection'],
  },
];

// GetAgentResult per agent, members in the order of the draft's example.
function details(name) {
  if (name === 'workflow-agent') {
    return {
      resultType: 'complete',
      agent: 'workflow-agent',
      instructions: 'Handle delivery readiness and approval workflows.',
      modelRoutingHint: { role: 'medium', vision: false },
      tools: [TOOLS[0]],
      ...CACHE,
    };
  }
  if (name === 'research-agent') {
    return {
      resultType: 'complete',
      agent: 'research-agent',
      instructions: 'Research vulnerabilities and collect technical evidence.',
      modelRoutingHint: { role: 'large', vision: false },
      tools: [],
      ...CACHE,
    };
  }
  return null;
}

// broken applies FAULT to an agents/get result (a fresh object).
function broken(r) {
  const d = structuredClone(r);
  switch (fault) {
    case 'agent-object': d.agent = CARDS.find((c) => c.name === r.agent); break;
    case 'agent-other-name': d.agent = r.agent === 'workflow-agent' ? 'research-agent' : 'workflow-agent'; break;
    case 'tool-differs': if (d.tools[0]) d.tools[0].description = 'Lists pipelines.'; break;
    case 'tool-unlisted': d.tools.push({ name: 'ghost_tool', inputSchema: { type: 'object' } }); break;
    case 'no-tools': delete d.tools; break;
    case 'bad-role': d.modelRoutingHint.role = 'xl'; break;
    case 'vision-string': d.modelRoutingHint.vision = 'false'; break;
    case 'instructions-array': d.instructions = [d.instructions]; break;
    case 'no-ttl': delete d.ttlMs; break;
    case 'no-cache-scope': delete d.cacheScope; break;
    case 'no-result-type': delete d.resultType; break;
  }
  return d;
}

function capabilities() {
  return { tools: {}, extensions: { 'io.modelcontextprotocol/agents': { listChanged: false } } };
}

const serverInfo = { name: 'draft-agents-server', version: '1.0.0' };

// answer returns [result] or [undefined, error, httpStatus].
function answer(method, params, modern) {
  const done = (r) => (modern ? { resultType: 'complete', ...r } : r);
  switch (method) {
    case 'initialize':
      return [{ protocolVersion: LEGACY, capabilities: capabilities(), serverInfo }];
    case 'server/discover':
      return [{ resultType: 'complete', supportedVersions: [MODERN], capabilities: capabilities(), ttlMs: 0, cacheScope: 'public',
        _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo } }];
    case 'ping':
      return [{}];
    case 'tools/list':
      return [modern ? done({ tools: TOOLS, ...CACHE }) : { tools: TOOLS }];
    case 'agents/list': {
      const pages = { '': 0, 'page-2': 1 };
      const cursor = params.cursor ?? '';
      if (!(cursor in pages)) return [undefined, { code: -32602, message: 'Invalid cursor' }, 200];
      const i = pages[cursor];
      const card = structuredClone(CARDS[i]);
      if (fault === 'card-no-capabilities' && card.name === 'workflow-agent') delete card.capabilities;
      const r = { resultType: 'complete', agents: [card], ...CACHE };
      if (i === 0) r.nextCursor = 'page-2';
      return [r];
    }
    case 'agents/get': {
      if (typeof params.name !== 'string') return [undefined, { code: -32602, message: 'Invalid params: name must be a string' }, 200];
      const d = details(params.name);
      if (!d) {
        if (fault === 'unknown-wrong-code') return [undefined, { code: -32601, message: 'Agent not found' }, 200];
        if (fault === 'unknown-no-reason') return [undefined, { code: -32602, message: 'Agent not found' }, 200];
        return [undefined, { code: -32602, message: 'Agent not found', data: { reason: 'agent_not_found' } }, 200];
      }
      return [broken(d)];
    }
    default:
      return [undefined, { code: -32601, message: `Method not found: ${method}` }, modern ? 404 : 200];
  }
}

function send(res, status, body) {
  const b = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) });
  res.end(b);
}

const server = createServer((req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.writeHead(404).end(); return; }
  if (req.method !== 'POST') { res.writeHead(405, { Allow: 'POST' }).end(); return; }
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > 1 << 20) { req.destroy(); return; }
    chunks.push(c);
  });
  req.on('end', () => {
    let msg;
    try { msg = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch {
      send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      return;
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg) || typeof msg.method !== 'string') {
      send(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } });
      return;
    }
    if (!('id' in msg)) { res.writeHead(202).end(); return; } // a notification
    const params = msg.params && typeof msg.params === 'object' ? msg.params : {};
    const meta = params._meta && typeof params._meta === 'object' ? params._meta : {};
    const version = meta['io.modelcontextprotocol/protocolVersion'];
    const modern = version !== undefined;
    if (modern && version !== MODERN) {
      send(res, 400, { jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version',
        data: { supported: [MODERN], requested: version } } });
      return;
    }
    const [result, error, status] = answer(msg.method, params, modern);
    if (error) send(res, status, { jsonrpc: '2.0', id: msg.id, error });
    else send(res, 200, { jsonrpc: '2.0', id: msg.id, result });
  });
});
server.listen(port, '127.0.0.1', () => console.log(`draft-agents-server on http://127.0.0.1:${port}/mcp${fault ? ` (fault ${fault})` : ''}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
