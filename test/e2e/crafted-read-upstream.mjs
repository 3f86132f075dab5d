// crafted-read-upstream.mjs: a legacy (2025-11-25) streamable HTTP MCP server
// written from the transport and JSON-RPC texts with plain node:http (none of
// the sidecar's code), for scripts/e2e-tap-judge.sh. It lists
// skill://tapped/data.txt in resources/list and answers a resources/read of it
// with a crafted text/event-stream reply, one way per MODE: a byte order mark,
// ids spelled otherwise, events of another type, two replies, duplicate keys,
// data split across lines. A read without the x-judge header (the sidecar's
// own reads, made to learn a digest) is refused with -32603, so whatever the
// sidecar publishes for the file was learned from the judge's read as it
// passed.
//
//   node crafted-read-upstream.mjs PORT MODE
import { createServer } from 'node:http';

const [port, mode] = process.argv.slice(2);
const URI = 'skill://tapped/data.txt';

const reply = (id, text) =>
  `{"jsonrpc":"2.0","id":${id},"result":{"contents":[{"uri":"${URI}","mimeType":"text/plain","text":"${text}"}]}}`;
const ev = (msg) => `data: ${msg}\n\n`;

// Each mode's SSE body for the request's raw id.
const modes = {
  'one': (id) => ev(reply(id, 'A')),
  'bom-one': (id) => '\ufeff' + ev(reply(id, 'A')),
  'bom-two': (id) => '\ufeff' + ev(reply(id, 'A')) + ev(reply(id, 'B')),
  'id-float': (id) => ev(reply(`${id}.0`, 'A')),
  'id-float-then': (id) => ev(reply(`${id}.0`, 'A')) + ev(reply(id, 'B')),
  'id-string-then': (id) => ev(reply(`"${id}"`, 'A')) + ev(reply(id, 'B')),
  'id-padded-string-then': (id) => ev(reply(`" ${id} "`, 'A')) + ev(reply(id, 'B')),
  'type-other-then': (id) => 'event: other\n' + ev(reply(id, 'A')) + ev(reply(id, 'B')),
  'type-other-alone': (id) => 'event: other\n' + ev(reply(id, 'A')),
  'type-padded-then': (id) => 'event:  message\n' + ev(reply(id, 'A')) + ev(reply(id, 'B')),
  'dup-id': (id) => ev(reply(id, 'A').replace('"id":', '"id":9999,"id":')),
  'dup-text': (id) => ev(reply(id, 'A').replace('"text":"A"', '"text":"B","text":"A"')),
  'split-lines': (id) => 'data: ' + reply(id, 'A').replace(',"result"', '\ndata: ,"result"') + '\n\n',
  'two-equal': (id) => ev(reply(id, 'A')) + ev(reply(id, 'A')),
};
if (!modes[mode]) {
  console.error(`crafted-read-upstream: unknown mode ${mode}; one of ${Object.keys(modes).join(' ')}`);
  process.exit(2);
}

const json = (res, body, headers = {}) => {
  res.writeHead(200, { 'Content-Type': 'application/json', ...headers });
  res.end(body);
};

createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    let msg;
    try {
      msg = JSON.parse(body);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (msg.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const id = JSON.stringify(msg.id);
    switch (msg.method) {
      case 'initialize':
        json(res, `{"jsonrpc":"2.0","id":${id},"result":{"protocolVersion":"2025-11-25","capabilities":{"resources":{}},"serverInfo":{"name":"crafted","version":"1"}}}`,
          { 'Mcp-Session-Id': 'crafted' });
        return;
      case 'resources/list':
        json(res, `{"jsonrpc":"2.0","id":${id},"result":{"resources":[{"uri":"${URI}","name":"data"}]}}`);
        return;
      case 'resources/templates/list':
        json(res, `{"jsonrpc":"2.0","id":${id},"result":{"resourceTemplates":[]}}`);
        return;
      case 'resources/read':
        if (!req.headers['x-judge']) {
          json(res, `{"jsonrpc":"2.0","id":${id},"error":{"code":-32603,"message":"not for the sidecar's own reads"}}`);
          return;
        }
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.end(modes[mode](id));
        return;
      default:
        json(res, `{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"Method not found"}}`);
    }
  });
}).listen(Number(port), '127.0.0.1');
