// examples/own-tool (the "Your own tool" program of docs/mcp.md): one tool of its own,
// served by dorm's server library, called by the official TypeScript SDK client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DORM_BIN, DormProcess, tempDir } from './lib/dorm_process.mjs';

// Built next to tools/dorm in the same build directory.
const OWN_TOOL_BIN = process.env.OWN_TOOL_BIN ?? resolve(dirname(DORM_BIN), '../examples/own-tool/own_tool');

async function startOwnTool(t, { dataDir, listen = '127.0.0.1:0' } = {}) {
  assert.ok(existsSync(OWN_TOOL_BIN), `${OWN_TOOL_BIN} is not built`);
  const dir = dataDir ?? tempDir(t);
  const proc = new DormProcess(t, [listen, `rocksdb:${join(dir, 'data')}`], { bin: OWN_TOOL_BIN });
  const line = await proc.waitForLine(/^listening on http:\/\//);
  const url = new URL(line.slice('listening on '.length));
  return { proc, url, port: Number(url.port), dataDir: dir };
}

async function connect(t, url) {
  const client = new Client({ name: 'own-tool-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  t.after(() => client.close());
  return client;
}

test('own_tool: the SDK client lists and calls its one tool; SIGTERM drains and exits 0', async (t) => {
  const { proc, url } = await startOwnTool(t);
  const client = await connect(t, url);
  assert.deepEqual(client.getServerVersion(), { name: 'own-tool', version: '1.0.0' });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name), ['add']);
  assert.deepEqual(tools[0].inputSchema.required, ['a', 'b']);

  const sum = await client.callTool({ name: 'add', arguments: { a: 40, b: 2 } });
  assert.equal(sum.isError, false);
  assert.deepEqual(sum.content, [{ type: 'text', text: '42' }]);
  const negative = await client.callTool({ name: 'add', arguments: { a: -7, b: 3 } });
  assert.equal(negative.content[0].text, '-4');
  // Arguments that do not fit the schema never reach the handler: an error result.
  for (const args of [{ a: 1 }, { a: 1.5, b: 2 }, { a: 2e12, b: 1 }, { a: '1', b: 2 }]) {
    const refused = await client.callTool({ name: 'add', arguments: args });
    assert.equal(refused.isError, true, JSON.stringify(args));
  }

  await client.close();
  proc.kill('SIGTERM');
  const { code } = await proc.waitForExit();
  assert.equal(code, 0);
  assert.match(proc.stderr, /signal_received signal=SIGTERM/);
  assert.match(proc.stderr, /\bstopped\b/);
});

test('own_tool: a bad storage URI is refused at start with exit status 1', async (t) => {
  assert.ok(existsSync(OWN_TOOL_BIN), `${OWN_TOOL_BIN} is not built`);
  const proc = new DormProcess(t, ['127.0.0.1:0', 'nosuchscheme:x'], { bin: OWN_TOOL_BIN });
  const { code } = await proc.waitForExit();
  assert.equal(code, 1);
  assert.match(proc.stderr, /storage_open_failed.*unknown scheme 'nosuchscheme'/);
  assert.equal(proc.stdoutLines.length, 0);
});
