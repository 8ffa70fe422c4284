// `dorm bench storage` runs end to end (tiny sizes; numbers from this build mean nothing,
// so none is asserted): every row is measured for every subject, and the open-after-kill
// step verifies, inside the program, that the killed writer's data came back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DormProcess } from './lib/dorm_process.mjs';

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
