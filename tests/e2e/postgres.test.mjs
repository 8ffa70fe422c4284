// `dorm serve --storage postgres://…` end to end, against a real PostgreSQL 15 server the
// test starts (lib/pg_server.mjs): the official SDK client stores a value, a call is cut
// by a SIGKILL of the server, the successor (waiting on the port and the store's owner
// lock) runs the reaper, the call rejects with -32001 `server_restart`, and the same
// session reads its value back from PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DormProcess, startPrimedCall } from './lib/dorm_process.mjs';
import { startPostgres } from './lib/pg_server.mjs';

test('postgres store: a session survives SIGKILL, and its cut call fails -32001 server_restart', async (t) => {
  const pg = await startPostgres(t);
  // lock_wait=0: the successor's open fails busy at once, and dorm serve's own --lock-wait
  // loop waits (and says so), as for the file stores.
  const storage = `${pg.uri}&table=e2e_sessions&lock_wait=0`;
  const first = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--reuse-port', '--storage', storage,
    '--fixtures', 'testing']);
  const line = await first.waitForLine(/^listening on http:\/\//);
  const url = new URL(line.slice('listening on '.length));
  assert.match(first.stderr, /postgres:\/\/dorm@/);
  assert.doesNotMatch(first.stderr, /password/i);

  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: 'dorm-e2e-postgres', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const stored = await client.callTool({ name: 'kv_put', arguments: { key: 'colour', value: 'teal' } });
  assert.equal(stored.isError ?? false, false);

  const { primed: primedSeen, outcome } = startPrimedCall(client, 'sleep', { ms: 30000 });
  await primedSeen;

  const successor = new DormProcess(t, ['serve', '--listen', `127.0.0.1:${url.port}`, '--reuse-port',
    '--storage', storage, '--fixtures', 'testing']);
  await successor.waitForStderr(/storage_locked_waiting/);
  first.kill('SIGKILL');
  await first.waitForExit();
  await successor.waitForLine(/^listening on http:\/\//);

  const result = await outcome;
  assert.equal(result.ok, false, 'the killed call resolved instead of failing');
  assert.equal(result.error.code, -32001);
  assert.equal(result.error.data?.reason, 'server_restart');

  // The same session, now served by the successor, reads what it stored before the kill.
  const read = await client.callTool({ name: 'kv_get', arguments: { key: 'colour' } });
  assert.equal(read.isError ?? false, false);
  assert.equal(read.content[0].text, 'teal');

  // `dorm inspect` reads the same table beside the running server, without its lock.
  const inspect = new DormProcess(t, ['inspect', '--storage', storage, '--json']);
  const { code } = await inspect.waitForExit();
  assert.equal(code, 0, inspect.stderr);
  const report = JSON.parse(inspect.stdoutLines.join('\n'));
  assert.ok(report.sessions.items.length >= 1);
  assert.deepEqual(report.indexes.find((i) => i.name === 'mcp.inflight')?.items ?? [], []);

  successor.kill('SIGTERM');
  const exit = await successor.waitForExit();
  assert.equal(exit.code, 0, successor.stderr);
});
