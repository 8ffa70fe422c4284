// The incident dorm exists to fix, end to end with the official SDK client and its default
// options: a call killed by SIGKILL mid-tool fails fast with a real error from the
// successor, instead of hanging until the client's own timeout.
//
// The successor is started before the kill and waits on the port (--reuse-port) and the
// store lock, as a supervisor's rolling restart would run it. The client retries a dropped
// stream only at about R and 2R (R = 500 ms), so a successor that starts after the kill
// must be ready within ~1.5 s; an ASan build on a loaded machine sometimes is not, and
// the test would then measure the machine, not the reaper. How the restart gap decides
// the outcome is charted by `dorm deploy-sim --restart-gap` (docs/deploy-sim.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DormProcess, startServe, startPrimedCall, WAIT_MS } from './lib/dorm_process.mjs';

test('SDK client: SIGKILL during a 30 s sleep, a successor waiting on the port: the call rejects -32001 server_restart, then 204', async (t) => {
  const first = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--reuse-port'] });
  // Every request the client makes, with its answer's status.
  const seen = [];
  let resumed204;
  const got204 = new Promise((resolve) => { resumed204 = resolve; });
  const loggingFetch = async (url, init = {}) => {
    const res = await fetch(url, init);
    const headers = new Headers(init.headers);
    const entry = { method: init.method ?? 'GET', lastEventId: headers.get('last-event-id'), status: res.status };
    seen.push(entry);
    if (entry.method === 'GET' && entry.lastEventId && entry.status === 204) resumed204();
    return res;
  };
  const transport = new StreamableHTTPClientTransport(first.url, { fetch: loggingFetch });
  const client = new Client({ name: 'dorm-e2e-reaper', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());

  const { primed: primedSeen, outcome } = startPrimedCall(client, 'sleep', { ms: 30000 });
  const token = await primedSeen;
  assert.match(token, /^[0-9a-f]{16}-0$/);

  // The successor binds the same port and waits for the store's lock; the client's
  // reconnect after the kill reaches it and is held until its reaper has run.
  const successor = new DormProcess(t, ['serve', '--listen', `127.0.0.1:${first.port}`, '--reuse-port',
    '--storage', `rocksdb:${first.dataDir}/data`, '--fixtures', 'testing']);
  await successor.waitForStderr(/storage_locked_waiting/);
  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();
  const killedAt = Date.now();
  await successor.waitForLine(/^listening on http:\/\//);

  const result = await outcome;
  const elapsed = Date.now() - killedAt;
  assert.equal(result.ok, false, 'the killed call resolved instead of failing');
  const { error } = result;
  assert.equal(error.code, -32001);
  assert.equal(error.data?.reason, 'server_restart');
  assert.equal(error.data?.retrySafe, false);
  assert.equal(typeof error.data?.deadGeneration, 'number');
  assert.doesNotMatch(error.message, /retry|try again/i);
  t.diagnostic(`kill to client error: ${elapsed} ms`);

  // The client reconnects once more after an error response; that resume gets 204.
  let timer;
  await Promise.race([got204, new Promise((resolve) => { timer = setTimeout(resolve, WAIT_MS); })]);
  clearTimeout(timer);
  const resumes = seen.filter((r) => r.method === 'GET' && r.lastEventId);
  assert.ok(resumes.some((r) => r.status === 200), `no resume delivered the error: ${JSON.stringify(resumes)}`);
  assert.equal(resumes.at(-1).status, 204, `resumes: ${JSON.stringify(resumes)}`);

  // `dorm inspect`, read-only beside the running server, shows the reaped stream: its
  // last event is the error, and no journal record or index entry is left.
  const inspect = new DormProcess(t, ['inspect', '--storage', `rocksdb:${first.dataDir}/data`, '--json']);
  const { code } = await inspect.waitForExit();
  assert.equal(code, 0, inspect.stderr);
  const report = JSON.parse(inspect.stdoutLines.join('\n'));
  const streamId = token.split('-')[0];
  const sessionReport = report.sessions.items.find((x) => x.streams.some((st) => st.id === streamId));
  assert.ok(sessionReport, `no session with stream ${streamId}`);
  const stream = sessionReport.streams.find((st) => st.id === streamId);
  assert.equal(stream.finished, true);
  const last = stream.events.at(-1).message;
  assert.equal(last.error.code, -32001);
  assert.equal(last.error.data.reason, 'server_restart');
  assert.deepEqual(sessionReport.journal, []);
  assert.deepEqual(report.indexes.find((i) => i.name === 'mcp.inflight')?.items ?? [], []);
});
