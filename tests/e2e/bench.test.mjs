// The benchmarks run end to end (tiny sizes; numbers from this build mean nothing, so none
// is asserted, only that each was measured): `dorm bench storage`, whose open-after-kill
// step verifies, inside the program, that the killed writer's data came back; `dorm bench
// boot`; `dorm bench http`, `dorm bench mcp` and `dorm bench streams`, which must kill
// every server they start; `dorm bench execute`; `dorm bench engine` (its QuickJS subject
// needs a copy of the peer, which a test machine does not have; the paced QuickJS driver's
// own checks run).
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { DormProcess, startServe } from './lib/dorm_process.mjs';
import { openSession, post } from './lib/mcp_http.mjs';

test('dorm bench storage prints a complete table and the open-after-kill figure', async (t) => {
  const bench = new DormProcess(t, ['bench', 'storage', '--rounds', '1', '--ops', '500']);
  const { code } = await bench.waitForExit(300_000);
  assert.equal(code, 0, bench.stderr);
  const rows = bench.stdoutLines.filter((l) => l.startsWith('| ') && !l.startsWith('| row'));
  const names = rows.map((r) => r.split('|')[1].trim());
  assert.deepEqual(names, [
    'put, batch of 1', 'put, batch of 10', 'put, batch of 100', 'point get',
    'prefix scan, 100 keys',
    'put, batch of 1 (fsync)', 'put, batch of 10 (fsync)', 'put, batch of 100 (fsync)',
    // The RocksDB settings table: dorm's options against each candidate.
    'write/delete churn, one call = 2 commits',
    "list an object's journal prefix (empty, over tombstones)",
    'get of a deleted key', 'get of a live key',
  ]);
  for (const row of rows) {
    const cells = row.split('|').slice(3, -1).map((c) => c.trim()).filter((c) => c !== '–');
    assert.ok(cells.length >= 5, row);
    for (const c of cells) assert.ok(Number(c) > 0, `${row}: ${c}`);
  }
  assert.ok(bench.stdoutLines.some((l) => /open after SIGKILL .* median \d+ ms/.test(l)));
});

test('dorm bench boot prepares a store, boots serve over it and reports every milestone', async (t) => {
  const bench = new DormProcess(t, ['bench', 'boot', '--sessions', '200', '--in-flight', '5', '--rounds', '1']);
  const { code } = await bench.waitForExit(300_000);
  assert.equal(code, 0, bench.stderr);
  const rows = bench.stdoutLines.filter((l) => l.startsWith('| ') && !l.startsWith('| milestone'));
  assert.deepEqual(rows.map((r) => r.split('|')[1].trim().split(' ')[0]),
    ['bound', 'storage', 'runtime', 'reaped', 'ready']);
  for (const row of rows) {
    const cells = row.split('|').slice(2, -1).map((c) => Number(c.trim()));
    for (const c of cells) assert.ok(c > 0, row);
  }
});

// The same exchange against dorm serve and dorm bench http: the bare server must frame
// tools/call exactly as dorm serve does (status, headers, events; stream ids differ), or
// `dorm bench mcp`'s ceiling would measure a different response.
async function echoExchange(url) {
  const session = await openSession(url);
  const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a "quoted" line\n' } } };
  const { res, text } = await post(url, call, { session, version: '2025-11-25' });
  const headers = {};
  for (const name of ['content-type', 'cache-control', 'server', 'content-length', 'transfer-encoding']) headers[name] = res.headers.get(name);
  return { status: res.status, headers, body: text.replace(/\b[0-9a-f]{16}-(\d+)\b/g, 'STREAM-$1') };
}

test('dorm bench http frames tools/call echo exactly as dorm serve does', async (t) => {
  const serve = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const bare = new DormProcess(t, ['bench', 'http', '--listen', '127.0.0.1:0']);
  const line = await bare.waitForLine(/^listening on http:\/\//);
  const bareUrl = new URL(line.slice('listening on '.length));
  const fromServe = await echoExchange(serve.url);
  const fromBare = await echoExchange(bareUrl);
  assert.equal(fromServe.status, 200);
  assert.match(fromServe.body, /^id: STREAM-0\nretry: \d+\ndata: \n\nid: STREAM-1\nevent: message\ndata: \{/);
  assert.deepEqual(fromBare, fromServe);
  bare.kill('SIGTERM');
  assert.deepEqual(await bare.waitForExit(), { code: 0, signal: null });
});

// A pid printed by `dorm bench mcp` names a process that is gone (reaped, or never ours).
function gone(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return e.code === 'ESRCH';
  }
}

test('dorm bench mcp drives all three servers, reports every row and leaves no server running', async (t) => {
  const bench = new DormProcess(t, ['bench', 'mcp', '--rounds', '1', '--seconds', '1', '--warmup', '0',
    '--window', '0.5', '--connections', '1,2']);
  const { code } = await bench.waitForExit(300_000);
  assert.equal(code, 0, bench.stderr + bench.stdoutLines.join('\n'));
  const pids = bench.stdoutLines.map((l) => l.match(/^server (dorm|sdk|bare): pid (\d+), port \d+$/)).filter(Boolean);
  assert.deepEqual(pids.map((m) => m[1]), ['dorm', 'sdk', 'bare']);
  for (const m of pids) assert.ok(gone(Number(m[2])), `server ${m[1]} (pid ${m[2]}) still exists`);
  for (const name of ['dorm', 'sdk', 'bare']) {
    const pid = pids.find((m) => m[1] === name)[2];
    assert.ok(bench.stdoutLines.some((l) => new RegExp(`^server ${name}: pid ${pid} exited 0, \\d+ ms after SIGTERM$`).test(l)),
      bench.stdoutLines.join('\n'));
  }
  const rows = bench.stdoutLines.filter((l) => l.startsWith('| tools/call echo'));
  assert.equal(rows.length, 10, rows.join('\n'));
  for (const c of [1, 2]) {
    const calls = rows.find((r) => r.startsWith(`| tools/call echo, ${c} connections, calls |`));
    // dorm, sdk, dorm/sdk, bare, dorm/bare: every figure measured.
    const cells = calls.split('|').slice(3, -1).map((x) => Number(x.trim()));
    assert.equal(cells.length, 5, calls);
    for (const v of cells) assert.ok(v > 0, calls);
  }
  // Per window: calls/s, its last / first, the server's CPU per call, its last / first.
  const windows = bench.stdoutLines.filter((l) => /^\| (dorm|sdk|bare) \| [12] \| 1 \| \d+, \d+ \| [\d.]+ \| \d+, \d+ \| [\d.]+ \|$/.test(l));
  assert.equal(windows.length, 6, bench.stdoutLines.join('\n'));
  assert.ok(bench.stdoutLines.some((l) => l.startsWith('- dorm p99 <= 50 ms: ')));
});

test('dorm bench streams holds every stream open, reports every row and leaves no server running', async (t) => {
  // Two rounds, so the closed-streams load runs once before the streams and once after.
  const bench = new DormProcess(t, ['bench', 'streams', '--streams', '40', '--rounds', '2', '--connections', '2',
    '--seconds', '0.5', '--warmup', '0', '--keepalive', '0.5']);
  const { code } = await bench.waitForExit(300_000);
  const out = bench.stderr + bench.stdoutLines.join('\n');
  assert.equal(code, 0, out);
  const pids = bench.stdoutLines.map((l) => l.match(/^round (\d): server pid (\d+), port \d+$/)).filter(Boolean);
  assert.deepEqual(pids.map((m) => m[1]), ['1', '2'], out);
  for (const m of pids) assert.ok(gone(Number(m[2])), `server of round ${m[1]} (pid ${m[2]}) still exists`);
  assert.equal(bench.stdoutLines.filter((l) => /^  server exited 0, \d+ ms after SIGTERM$/.test(l)).length, 2, out);
  // Both rounds measured the calls with the streams closed and open, in both orders.
  const loads = bench.stdoutLines.filter((l) => /^  tools\/call on 2 other sessions, streams (open|closed): /.test(l));
  assert.deepEqual(loads.map((l) => l.includes('streams open') ? 'open' : 'closed'), ['closed', 'open', 'open', 'closed'], out);
  const row = (name) => bench.stdoutLines.find((l) => l.startsWith(`| ${name} |`));
  assert.equal(row('open standalone GET streams'), '| open standalone GET streams | count | 40 |');
  for (const name of ['tools/call p99 ratio, open / closed', 'tools/call p50 ratio, open / closed']) {
    assert.ok(Number(row(name)?.split('|')[3]) > 0, out);
  }
  assert.ok(row('RSS per open stream'), out);
  assert.ok(bench.stdoutLines.some((l) => l.startsWith('targets (issue 22): RSS per open stream <= 8 KiB: ')), out);
});

test('dorm bench mcp refuses bad options before starting any server', async (t) => {
  for (const [args, message] of [
    [['--servers', 'dorm,nginx'], /--servers/],
    [['--servers', 'dorm,dorm'], /named twice/],
    [['--connections', '0'], /--connections/],
    [['--seconds', '1', '--window', '5'], /--window/],
  ]) {
    const bench = new DormProcess(t, ['bench', 'mcp', ...args]);
    const { code } = await bench.waitForExit();
    assert.notEqual(code, 0, args.join(' '));
    assert.match(bench.stderr, message, args.join(' '));
    assert.ok(!bench.stdoutLines.some((l) => l.startsWith('server ')), bench.stdoutLines.join('\n'));
  }
});

test('dorm bench engine measures every case for dorm and bare V8, paced rows included', async (t) => {
  const bench = new DormProcess(t, ['bench', 'engine', '--rounds', '1', '--runs', '20', '--tool-runs', '2']);
  const { code } = await bench.waitForExit(300_000);
  assert.equal(code, 0, bench.stderr);
  const at = bench.stdoutLines.findIndex((l) => l.startsWith('case '));
  assert.ok(at >= 0, bench.stdoutLines.join('\n'));
  const rows = new Map();
  for (const line of bench.stdoutLines.slice(at + 1)) {
    const m = /^(.*?)\s{2,}(\S+)(?:\s+(\S+))?(?:\s+(\S+))?$/.exec(line);
    if (m) rows.set(m[1].trim(), m.slice(2).filter((c) => c !== undefined));
  }
  const withBare = ['trivial p50 ms (concurrency 1)', 'trivial p99 ms (concurrency 1)',
    'trivial executions/s (concurrency 1)', 'trivial p50 ms, 2 ms between executions',
    'trivial p99 ms, 2 ms between executions'];
  const dormOnly = ['trivial executions/s (concurrency 16)', '100 sequential tool calls p50 ms',
    'memory bomb to its error ms', 'replay of 100 journaled calls ms', 'worker RSS KiB (1 warm slot)'];
  for (const name of [...withBare, ...dormOnly]) {
    const cells = rows.get(name);
    assert.ok(cells, `no row "${name}"`);
    assert.ok(Number(cells[0]) > 0, `${name}: ${cells}`);
    if (withBare.includes(name)) assert.ok(Number(cells[1]) > 0, `${name}: ${cells}`);
  }
  assert.ok(bench.stdoutLines.some((l) => /^ratio: trivial p50 dorm\/bare V8 \d/.test(l)));
});

test('the paced QuickJS driver refuses bad options with a message', async () => {
  const script = fileURLToPath(new URL('../../tools/bench/quickjs_paced.mjs', import.meta.url));
  const missing = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /--quickjs-dir is required/);
  const bad = spawnSync(process.execPath, [script, '--quickjs-dir', '/nonexistent', '--runs', '0'],
    { encoding: 'utf8', timeout: 30_000 });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--runs and --paced-runs must be positive/);
});

test('dorm bench execute reports every row: round trips, resume from cold, paused memory', async (t) => {
  const bench = new DormProcess(t, ['bench', 'execute', '--rounds', '1', '--calls', '10', '--paused', '20']);
  const { code } = await bench.waitForExit(300_000);
  assert.equal(code, 0, bench.stderr);
  const rows = new Map(bench.stdoutLines.filter((l) => l.startsWith('| ') && !l.startsWith('| row') && !l.startsWith('| memory'))
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()))
    .map(([name, ...cells]) => [name, cells]));
  for (const name of ['tools/call echo (baseline)', 'execute `return 1`',
    'execute, 20 tally calls, live (baseline)',
    'resume from cold: replay of 20 journaled calls, then the approved call']) {
    const cells = rows.get(name);
    assert.ok(cells, `no row "${name}" in ${[...rows.keys()]}`);
    for (const c of cells) assert.ok(Number(c) > 0, `${name}: ${cells}`);
  }
  const memory = [...rows.keys()].find((k) => k.startsWith('this process, MiB'));
  assert.ok(memory, 'no memory row');
  assert.ok(rows.get(memory).slice(0, 2).every((c) => Number(c) > 0), String(rows.get(memory)));
});
