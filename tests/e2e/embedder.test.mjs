// examples/embedder's counter_server, built by tools/test from an installed dorm (through
// pkg-config alone): MCP served on the example's own storage backend, with tools backed by
// its own durable object class, called by the official TypeScript SDK client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DORM_BIN, DormProcess, WAIT_MS, tempDir } from './lib/dorm_process.mjs';

// tools/test builds the example in <build>/example-embedder after installing dorm.
const COUNTER_SERVER_BIN =
  process.env.COUNTER_SERVER_BIN ?? resolve(dirname(DORM_BIN), '../example-embedder/counter_server');

async function startCounterServer(t, logFile, windowMs) {
  assert.ok(existsSync(COUNTER_SERVER_BIN),
    `${COUNTER_SERVER_BIN} is not built: tools/test installs dorm and builds examples/embedder`);
  const proc = new DormProcess(t, ['127.0.0.1:0', logFile, String(windowMs)], { bin: COUNTER_SERVER_BIN });
  const line = await proc.waitForLine(/^listening on http:\/\//);
  return { proc, url: new URL(line.slice('listening on '.length)) };
}

async function connect(t, url) {
  const client = new Client({ name: 'embedder-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  t.after(() => client.close());
  return client;
}

async function read(client, name) {
  const result = await client.callTool({ name: 'counter_read', arguments: { name } });
  assert.equal(result.isError, false, JSON.stringify(result));
  return result.structuredContent;
}

test('embedder: counters on the example backend survive SIGKILL; SIGTERM drains and exits 0', async (t) => {
  const logFile = join(tempDir(t), 'counter-store.log');
  const first = await startCounterServer(t, logFile, 3_600_000);
  const client = await connect(t, first.url);
  assert.deepEqual(client.getServerVersion(), { name: 'counter-server', version: '1.0.0' });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['counter_add', 'counter_read']);

  const added = [];
  for (const [name, by] of [['a', 2], ['a', 3], ['b', -4]]) {
    const result = await client.callTool({ name: 'counter_add', arguments: { name, by } });
    assert.equal(result.isError, false);
    added.push(result.content[0].text);
  }
  assert.deepEqual(added, ['2', '5', '-4']);
  assert.deepEqual(await read(client, 'a'), { count: 5, previous: 0, windows: 0 });
  // Arguments that do not fit the schema never reach the counter.
  const refused = await client.callTool({ name: 'counter_add', arguments: { name: 'a', by: 1.5 } });
  assert.equal(refused.isError, true);

  // Killed: the next process finds every acknowledged add in the log file.
  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();
  const second = await startCounterServer(t, logFile, 3_600_000);
  const again = await connect(t, second.url);
  assert.deepEqual(await read(again, 'a'), { count: 5, previous: 0, windows: 0 });
  assert.deepEqual(await read(again, 'b'), { count: -4, previous: 0, windows: 0 });

  await again.close();
  second.proc.kill('SIGTERM');
  const { code } = await second.proc.waitForExit();
  assert.equal(code, 0);
  assert.match(second.proc.stderr, /\bstopped\b/);
});

test('embedder: the counter\'s alarm closes its window while the server runs', async (t) => {
  const logFile = join(tempDir(t), 'counter-store.log');
  const { proc, url } = await startCounterServer(t, logFile, 300);
  const client = await connect(t, url);
  await client.callTool({ name: 'counter_add', arguments: { name: 'w', by: 9 } });
  // Polled, with a bound: the alarm fires 300 ms after the add, on the server's clock.
  const deadline = Date.now() + WAIT_MS;
  let state = await read(client, 'w');
  while (state.windows === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    state = await read(client, 'w');
  }
  assert.deepEqual(state, { count: 0, previous: 9, windows: 1 });
  await client.close();
  proc.kill('SIGTERM');
  assert.equal((await proc.waitForExit()).code, 0);
});

test('embedder: a window of 0 is refused at start with exit status 1', async (t) => {
  assert.ok(existsSync(COUNTER_SERVER_BIN), `${COUNTER_SERVER_BIN} is not built`);
  const proc = new DormProcess(t, ['127.0.0.1:0', join(tempDir(t), 'x.log'), '0'], { bin: COUNTER_SERVER_BIN });
  const { code } = await proc.waitForExit();
  assert.equal(code, 1);
  assert.match(proc.stderr, /counter window must be at least 1 ms/);
});
