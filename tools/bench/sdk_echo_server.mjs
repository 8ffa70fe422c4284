// The official TypeScript SDK's server (1.32, loaded from tests/e2e/node_modules) with the
// `echo` tool of `dorm serve --fixtures testing`: `dorm bench mcp`'s baseline. Stateful
// Streamable HTTP, a transport and an McpServer per session, in memory, no durability;
// answers in the SDK's default framing (SSE). Prints the same ready line as dorm serve.
//   node tools/bench/sdk_echo_server.mjs [--port 0]
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const e2e = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'tests/e2e');
const load = (m) => import(pathToFileURL(createRequire(join(e2e, 'package.json')).resolve(m)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = await load('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { z } = await load('zod');
const { values: args } = parseArgs({ options: { port: { type: 'string', default: '0' } } });

const sessions = new Map();
async function open() {
  const server = new McpServer({ name: 'sdk-echo', version: '1.0.0' });
  server.registerTool('echo', { description: 'Returns the text it is given.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => sessions.delete(transport.sessionId);
  await server.connect(transport);
  return transport;
}

const http = createServer(async (req, res) => {
  const id = req.headers['mcp-session-id'];
  const transport = id === undefined ? await open() : sessions.get(id);
  if (!transport) return res.writeHead(404).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
  await transport.handleRequest(req, res);
});
http.listen(Number(args.port), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
