// ts-read.mjs: reads one resource with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, a legacy streamable HTTP session) and prints
// the sha256 of the text it took, "sha256:<hex>", or "none" when the read
// gave it nothing. Every request carries x-judge: 1 (see
// crafted-read-upstream.mjs).
//
//   E2E_NPM_DIR=<.tools/e2e-npm> node ts-read.mjs URL URI
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [url, uri] = process.argv.slice(2);
const require = createRequire(join(process.env.E2E_NPM_DIR, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const client = new Client({ name: 'ts-read', version: '1.0.0' });
client.onerror = () => {}; // a reply for an unknown id is reported here; it is not the answer
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { 'x-judge': '1' } } });
let out = 'none';
try {
  await client.connect(transport);
  const res = await client.readResource({ uri }, { timeout: 10000 });
  if (res.contents.length === 1 && typeof res.contents[0].text === 'string') {
    out = 'sha256:' + createHash('sha256').update(res.contents[0].text, 'utf8').digest('hex');
  }
} catch {
  // nothing taken
}
console.log(out);
await client.close().catch(() => {});
process.exit(0);
