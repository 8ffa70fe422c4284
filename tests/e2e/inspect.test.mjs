// `dorm inspect` as a real process beside a running `dorm serve` on the same RocksDB
// store: it reads sessions, streams, decoded events and in-flight calls without
// disturbing the server, and refuses stores that do not exist without creating them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DormProcess, startServe, tempDir, WAIT_MS } from './lib/dorm_process.mjs';
import { post, sseMessages, openSession, ACCEPT_BOTH } from './lib/mcp_http.mjs';

// Runs `dorm inspect ARGS` to completion; resolves with {code, stdout, stderr}.
async function inspect(t, args) {
  const proc = new DormProcess(t, ['inspect', ...args]);
  const { code } = await proc.waitForExit();
  return { code, stdout: proc.stdoutLines.join('\n'), stderr: proc.stderr };
}

async function inspectJson(t, storage, extra = []) {
  const { code, stdout, stderr } = await inspect(t, ['--storage', storage, '--json', ...extra]);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout);
}

const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

test('inspect --json while serve runs: the session, its streams and decoded events, an in-flight call', async (t) => {
  // --drain-timeout 0: the call left running is stopped at SIGTERM instead of being given
  // the default 30 s drain window.
  const { proc, url, dataDir } = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--drain-timeout', '0'] });
  const storage = `rocksdb:${join(dataDir, 'data')}`;
  const session = await openSession(url);
  const echoed = await post(url, call(2, 'echo', { text: 'seen by inspect' }), { session });
  assert.equal(echoed.res.status, 200);
  assert.equal(sseMessages(echoed.text).at(-1).result.content[0].text, 'seen by inspect');

  // A call that stays in flight while we look (aborted at the end of the test).
  const abort = new AbortController();
  t.after(() => abort.abort());
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-session-id': session },
    body: JSON.stringify(call('slow', 'sleep', { ms: 120_000 })),
    signal: abort.signal,
  }).then((r) => r.text()).catch(() => {});

  // The server commits the call's journal record when the call starts; look until it shows.
  let report;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    report = await inspectJson(t, storage);
    const journal = report.sessions.items[0]?.journal ?? [];
    if (journal.some((j) => j.request === 'slow')) break;
    assert.ok(Date.now() < deadline, `no journal record for the sleep call within ${WAIT_MS} ms: ${JSON.stringify(report)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(report.readOnly, true);
  assert.ok(report.runtime.generation >= 1);
  assert.equal(report.runtime.cleanShutdownGeneration, null);  // a server is running
  assert.deepEqual(report.namespaces, [{ name: 'mcp-session', objects: 1 }]);
  assert.equal(report.sessions.total, 1);
  const [s] = report.sessions.items;
  assert.match(s.id, /^[0-9a-f]{64}$/);
  assert.equal(s.meta.protocolVersion, '2025-11-25');
  assert.equal(s.meta.clientInfo.name, 'raw-test');
  assert.equal(s.meta.initialized, true);

  const echoStream = s.streams.find((st) => st.request === 2);
  assert.ok(echoStream, JSON.stringify(s.streams));
  assert.equal(echoStream.finished, true);
  assert.equal(echoStream.events[0].priming, true);
  const response = echoStream.events.at(-1);
  assert.equal(response.id, `${echoStream.id}-${response.seq}`);
  assert.deepEqual(response.message, sseMessages(echoed.text).at(-1));
  assert.equal(response.message.result.content[0].text, 'seen by inspect');

  const slow = s.journal.find((j) => j.request === 'slow');
  assert.equal(slow.generation, report.runtime.generation);
  assert.equal(slow.earlierGeneration, false);
  const slowStream = s.streams.find((st) => st.id === slow.stream);
  assert.equal(slowStream.finished, false);
  const inflight = report.indexes.find((i) => i.name === 'mcp.inflight');
  assert.deepEqual(inflight.items.map((e) => [e.session, e.request]), [[s.id, 'slow']]);

  // One session by its MCP session id gives the same session.
  const one = await inspectJson(t, storage, ['--session', session]);
  assert.equal(one.sessions.items.length, 1);
  assert.equal(one.sessions.items[0].id, s.id);

  // Text mode names the session and shows the event.
  const text = await inspect(t, ['--storage', storage]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`^session ${s.id}$`, 'm'));
  assert.match(text.stdout, /client raw-test 1/);
  assert.match(text.stdout, /"text":"seen by inspect"/);
  assert.match(text.stdout, /index mcp\.inflight: 1 entry/);

  // The server noticed nothing: it still answers, and stops cleanly.
  const ping = await post(url, { jsonrpc: '2.0', id: 3, method: 'ping' }, { session });
  assert.equal(ping.res.status, 200);
  // Nothing went wrong in it. A slow_turn warning is left out: it reports the machine's
  // load (a sanitizer build beside other work), not anything inspect did.
  const complaints = proc.stderr.split('\n')
    .filter((line) => /Z (warning|error|critical) /.test(line) && !/ slow_turn /.test(line));
  assert.deepEqual(complaints, []);
  abort.abort();
  proc.kill('SIGTERM');
  assert.deepEqual(await proc.waitForExit(), { code: 0, signal: null });
  const after = await inspectJson(t, storage);
  assert.equal(after.runtime.cleanShutdownGeneration, report.runtime.generation);
});

test('inspect refuses a store that does not exist, and creates nothing', async (t) => {
  const dir = tempDir(t);
  for (const [scheme, name] of [['rocksdb', 'no-such-store'], ['sqlite', 'no-such.sqlite']]) {
    const path = join(dir, name);
    const { code, stdout, stderr } = await inspect(t, ['--storage', `${scheme}:${path}`]);
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.match(stderr, new RegExp(`no ${scheme} store at '${path.replace(/[.]/g, '\\.')}'`));
    assert.equal(existsSync(path), false);
    assert.equal(existsSync(`${path}.lock`), false);
  }
  const memory = await inspect(t, ['--storage', 'memory:']);
  assert.equal(memory.code, 1);
  assert.match(memory.stderr, /cannot be opened read-only: a memory store starts empty/);
  const bad = await inspect(t, ['--storage', 'floppy:/dev/fd0']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /unknown scheme 'floppy'/);
});
