// `dorm torture` end to end: ten SIGKILLs of a real `dorm serve` under sixteen concurrent
// sessions, on RocksDB and on SQLite. Every check must hold (nothing acknowledged lost,
// nothing twice, no call hung, no session lost), real work must have been done, and no
// server the rig started may outlive it. Bad options are refused before anything starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DormProcess } from './lib/dorm_process.mjs';

// A run's bound: ten restarts of an ASan build (about 3 s each on a busy machine), the
// load between them and the checks, with room to spare; the rig's own limit is lower, so
// a slow run ends with its report rather than being killed.
const RUN_MS = 150_000;
const TIME_LIMIT_S = 110;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

for (const [store, template] of [['rocksdb', 'rocksdb:{dir}/store'], ['sqlite', 'sqlite:{dir}/store.db']]) {
  test(`torture on ${store}: 10 kills under 16 sessions lose nothing acknowledged, double nothing, hang nothing`, async (t) => {
    const proc = new DormProcess(t, ['torture', '--cycles', '10', '--sessions', '16', '--format', 'json',
      '--storage', template, '--seed', '23', '--time-limit', String(TIME_LIMIT_S)]);
    const { code } = await proc.waitForExit(RUN_MS);
    const report = JSON.parse(proc.stdoutLines.join('\n'));
    assert.deepEqual(report.findings, [], proc.stderr);
    assert.equal(report.stopped, null, proc.stderr);
    assert.equal(code, 0, proc.stderr);
    assert.equal(report.seed, 23);
    assert.equal(report.cycles, 10);
    for (const key of ['lost', 'duplicated', 'reappeared', 'foreign', 'hung', 'sessions_lost']) {
      assert.equal(report[key], 0, `${key}: ${proc.stderr}`);
    }
    assert.ok(report.calls > 0);
    assert.ok(report.acked > 0);
    assert.ok(report.acked <= report.appends && report.appends <= report.calls);
    assert.ok(report.sessions >= 16);
    // A kill interrupts calls, and the reaper answers some of them (over ten kills under
    // sixteen busy sessions, at least one call is always in flight).
    assert.ok(report.reaped > 0, proc.stderr);
    // Writer lanes keep appends in flight, so the kills cut writes too.
    assert.ok(report.appends_hit > 0, proc.stderr);
    assert.equal(typeof report.error_ms_p99, 'number');
    // One progress line per cycle, and every server it started (the first and ten
    // successors) is gone.
    const cycleLines = proc.stderr.split('\n').filter((l) => /^torture: cycle \d+\/10:/.test(l));
    assert.equal(cycleLines.length, 10);
    const pids = [...proc.stderr.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
    assert.equal(new Set(pids).size, 11);
    assert.deepEqual(pids.filter(alive), []);
  });
}

test('torture: a --storage without {dir}, or one that does not parse, is refused before anything starts', async (t) => {
  for (const storage of ['rocksdb:/var/lib/dorm', 'nosuch:{dir}/store', 'memory:{dir}']) {
    const proc = new DormProcess(t, ['torture', '--cycles', '1', '--storage', storage]);
    const { code } = await proc.waitForExit();
    assert.notEqual(code, 0);
    assert.match(proc.stderr, /--storage/);
    assert.doesNotMatch(proc.stderr, /ready on port/);
    assert.deepEqual(proc.stdoutLines.filter((l) => l !== ''), []);
  }
});
