// `dorm serve` as a real process: readiness, signals, and restarting on the same port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DormProcess, startServe, connect, WAIT_MS } from './lib/dorm_process.mjs';

const get = (url, path) => fetch(new URL(path, url), { signal: AbortSignal.timeout(WAIT_MS) });

test('serve on port 0: healthz and readyz answer 200 once the ready line is printed', async (t) => {
  const { proc, url, port } = await startServe(t);
  assert.ok(port > 0, `a real port was chosen: ${url}`);
  assert.equal(url.pathname, '/mcp');
  assert.equal((await get(url, '/healthz')).status, 200);
  const ready = await get(url, '/readyz');
  assert.equal(ready.status, 200);
  assert.equal(await ready.text(), 'ready\n');
  assert.equal((await get(url, '/no-such-path')).status, 404);
  assert.ok(proc.running());
});

test('SIGTERM stops serve with exit status 0', async (t) => {
  const { proc } = await startServe(t);
  proc.kill('SIGTERM');
  const { code, signal } = await proc.waitForExit();
  assert.equal(signal, null);
  assert.equal(code, 0);
});

test('SIGINT stops serve with exit status 0', async (t) => {
  const { proc } = await startServe(t);
  proc.kill('SIGINT');
  assert.deepEqual(await proc.waitForExit(), { code: 0, signal: null });
});

test('a second serve binds the same port right after the first is SIGKILLed', async (t) => {
  const first = await startServe(t);
  // An open connection makes the server side close it actively when the process dies,
  // leaving a TIME_WAIT socket on the port: without SO_REUSEADDR the rebind would fail.
  const socket = await connect(first.port);
  assert.equal((await get(first.url, '/healthz')).status, 200);
  first.proc.kill('SIGKILL');
  assert.equal((await first.proc.waitForExit()).signal, 'SIGKILL');
  socket.destroy();

  const second = await startServe(t, { dataDir: first.dataDir, listen: `127.0.0.1:${first.port}` });
  assert.equal(second.port, first.port);
  assert.equal((await get(second.url, '/readyz')).status, 200);
});

test('a port already in use is a clear start-up error with exit status 1', async (t) => {
  const first = await startServe(t);
  const second = new DormProcess(t, ['serve', '--listen', `127.0.0.1:${first.port}`, '--storage', `rocksdb:${first.dataDir}/other`]);
  const { code } = await second.waitForExit();
  assert.equal(code, 1);
  assert.match(second.stderr, new RegExp(`cannot bind 127\\.0\\.0\\.1:${first.port}: Address already in use`));
});

test('bad --listen and bad --storage are rejected with a reason', async (t) => {
  const badListen = new DormProcess(t, ['serve', '--listen', 'localhost', '--storage', 'rocksdb:unused']);
  assert.equal((await badListen.waitForExit()).code, 1);
  assert.match(badListen.stderr, /invalid listen address 'localhost': expected HOST:PORT/);

  const badStorage = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage', 'floppy:/dev/fd0']);
  assert.equal((await badStorage.waitForExit()).code, 1);
  assert.match(badStorage.stderr, /invalid storage URI 'floppy:\/dev\/fd0': unknown scheme 'floppy'/);
});

test('--version and --help', async (t) => {
  const version = new DormProcess(t, ['--version']);
  assert.equal((await version.waitForExit()).code, 0);
  assert.match(version.stdoutLines[0], /^dorm \d+\.\d+\.\d+ \(commit /);

  const help = new DormProcess(t, ['serve', '--help']);
  assert.equal((await help.waitForExit()).code, 0);
  const text = help.stdoutLines.join('\n');
  for (const flag of ['--listen', '--storage', '--http-threads']) assert.ok(text.includes(flag), flag);
});

test('--log-format json: every stderr line is one JSON object with time, level and event', async (t) => {
  const { proc } = await startServe(t, { extraArgs: ['--log-format', 'json', '--log-level', 'debug'] });
  proc.kill('SIGTERM');
  assert.equal((await proc.waitForExit()).code, 0);
  const lines = proc.stderr.split('\n').filter((l) => l.length > 0);
  const events = lines.map((l) => JSON.parse(l));
  for (const e of events) {
    assert.match(e.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(['trace', 'debug', 'info', 'warning', 'error', 'critical'].includes(e.level), e.level);
    assert.equal(typeof e.event, 'string');
  }
  const names = events.map((e) => e.event);
  for (const name of ['bound', 'storage_open', 'runtime_started', 'signal_received', 'stopped']) {
    assert.ok(names.includes(name), `${name} in ${names}`);
  }
  assert.equal(events.find((e) => e.event === 'runtime_started').generation, 1);
});

test('--log-level warn hides info lines; a bad --log-format is refused', async (t) => {
  const { proc } = await startServe(t, { extraArgs: ['--log-level', 'warn'] });
  proc.kill('SIGTERM');
  assert.equal((await proc.waitForExit()).code, 0);
  assert.doesNotMatch(proc.stderr, /runtime_started/);

  const bad = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--log-format', 'xml']);
  assert.notEqual((await bad.waitForExit()).code, 0);
  assert.match(bad.stderr, /--log-format: xml not in \{json,text\}/);
});

test('--trace-file in a directory that does not exist is a clear start-up error', async (t) => {
  const bad = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage', 'memory:', '--trace-file', '/nonexistent-dir/spans.jsonl']);
  assert.equal((await bad.waitForExit()).code, 1);
  assert.match(bad.stderr, /cannot open trace file '\/nonexistent-dir\/spans\.jsonl': No such file or directory/);
});

test('dorm --version names the version, the commit and the libraries in use', async (t) => {
  const proc = new DormProcess(t, ['--version']);
  assert.equal((await proc.waitForExit()).code, 0, proc.stderr);
  const [first, ...libraries] = proc.stdoutLines.filter((l) => l.trim() !== '');
  assert.match(first, /^dorm \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown)\)$/);
  const names = libraries.map((l) => l.trim().split(' ')[0]);
  assert.deepEqual(names, ['CAF', 'RocksDB', 'V8', 'SQLite', 'Boost']);
  assert.match(libraries[0], /CAF 0\.17\.\d+$/);
  assert.match(libraries[2], /V8 10\.2\./);
});
