// `dorm serve` on a disk that fills up: a 320 MiB tmpfs this file mounts (as root, which
// the project's machine and CI are; anywhere else the mount fails and the test fails,
// saying so). Filled with 100 KB kv_put calls, the server answers 507 and stays up, /healthz
// 200, /readyz 503, a resume still replays; with space freed, it recovers by itself. A
// restart while the disk is full exits 1 with a clear message; once space is freed it starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, rmdirSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DormProcess, startServe, WAIT_MS } from './lib/dorm_process.mjs';
import { post, request, openSession, sseMessages } from './lib/mcp_http.mjs';

const MiB = 1024 * 1024;
// Random base64: RocksDB compresses its table files (Snappy), and a value it could shrink
// would leave the disk filling only as fast as the WAL outruns the flushes, so on some runs
// never. 75,000 random bytes are 100,000 characters that do not compress.
const VALUE = randomBytes(75_000).toString('base64');
// Far more 100 KB calls than fit between the ballast and the reserve.
const MAX_CALLS = 3_000;

const get = (url, path) => fetch(new URL(path, url), { signal: AbortSignal.timeout(WAIT_MS) });

// Mounts a tmpfs of `bytes` on a fresh directory; unmounted (lazily, so nothing left open
// can keep it) and removed when the test ends, however it ends.
function mountTmpfs(t, bytes) {
  const dir = mkdtempSync(join(tmpdir(), 'dorm-e2e-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { timeout: WAIT_MS, stdio: 'pipe' });
  } catch (e) {
    rmdirSync(dir);
    throw new Error(`cannot mount a tmpfs on ${dir} (this test needs root): ${e.stderr ?? e.message}`);
  }
  t.after(() => {
    try { execFileSync('umount', ['-l', dir], { timeout: WAIT_MS, stdio: 'pipe' }); } finally { rmdirSync(dir); }
  });
  return dir;
}

const freeBytes = (dir) => { const s = statfsSync(dir); return s.bavail * s.bsize; };
const ballast = (path, bytes) => execFileSync('fallocate', ['-l', String(bytes), path], { timeout: WAIT_MS });

// Polls `probe` until it returns a defined value, for at most `ms` (each probe bounded too).
async function until(probe, what, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const kvPut = (id, key) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'kv_put', arguments: { key, value: VALUE } } });
const kvGet = (id, key) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'kv_get', arguments: { key } } });

function assertStorageFull({ res, text }) {
  assert.equal(res.status, 507, text);
  assert.equal(res.headers.get('retry-after'), '10');
  const body = JSON.parse(text);
  assert.equal(body.error.code, -32000);
  assert.equal(body.error.data.reason, 'no_space');
  assert.equal(body.id, null);
}

test('a full disk: 507s, alive, readyz 503, resumes replay; freed space recovers; a restart while full exits 1 until space is freed', async (t) => {
  const mnt = mountTmpfs(t, 320 * MiB);
  // A ballast leaves ~40 MiB above the default reserve of 128 MiB and RocksDB's WAL, which
  // it preallocates at 1.1 x the write buffer (~70 MiB), so a few hundred calls fill it.
  ballast(join(mnt, 'ballast'), freeBytes(mnt) - 240 * MiB);
  const data = join(mnt, 'data');
  const extraArgs = ['--fixtures', 'testing', '--log-format', 'text'];
  const server = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage', `rocksdb:${data}`, ...extraArgs]);
  const line = await server.waitForLine(/^listening on http:\/\//);
  const url = new URL(line.slice('listening on '.length));
  const session = await openSession(url);

  // The first call's stream, to resume while full.
  const first = await post(url, kvPut(2, 'k0'), { session });
  assert.equal(first.res.status, 200);
  const priming = first.text.match(/^id: (\S+)$/m)[1];

  // Fills until a write is refused. RocksDB's own background work (a flush that retires its
  // preallocated WAL, a compaction) may give back a little room after a refusal, so a later
  // write can still fit: a step that needs the disk full fills again.
  let stored = 1;
  let nextId = 3;
  async function fill() {
    for (let i = 0; i < MAX_CALLS; i++) {
      const r = await post(url, kvPut(nextId, `k${nextId - 2}`), { session });
      nextId++;
      if (r.res.status !== 200) return r;
      stored++;
    }
    assert.fail(`the disk never filled in ${MAX_CALLS} calls`);
  }
  assertStorageFull(await fill());
  assert.ok(stored > 50, `only ${stored} calls fit`);
  assert.ok(server.running());
  // Refused again: a full disk keeps answering 507 with the same body, and the server stays up.
  assertStorageFull(await fill());
  assert.ok(server.running());

  assert.equal((await get(url, '/healthz')).status, 200);
  const readyz = await until(async () => {
    const r = await get(url, '/readyz');
    if (r.status === 503) return r.text();
    assertStorageFull(await fill());  // room came back by itself: take it
    return undefined;
  }, '/readyz 503');
  assert.match(readyz, /^storage full: /);
  await server.waitForStderr(/storage_no_space/);

  // A resume only reads: the first call's result comes back.
  const resumed = await request(url, 'GET', { session, headers: { 'last-event-id': priming } });
  assert.equal(resumed.res.status, 200);
  assert.deepEqual(sseMessages(resumed.text).map((m) => m.result?.content?.[0]?.text), ['stored k0']);

  // Space freed: /readyz and writes come back by themselves.
  rmSync(join(mnt, 'ballast'));
  await until(async () => ((await get(url, '/readyz')).status === 200 ? true : undefined), '/readyz 200 after freeing space');
  await server.waitForStderr(/storage_space_recovered/);
  assert.equal((await post(url, kvPut(9_001, 'after'), { session })).res.status, 200);
  const after = sseMessages((await post(url, kvGet(9_002, 'after'), { session })).text);
  assert.equal(after[0].result.content[0].text, VALUE);
  assert.doesNotMatch(server.stderr, /object_reset/);  // logged at debug only
  server.kill('SIGTERM');
  assert.deepEqual(await server.waitForExit(), { code: 0, signal: null });

  // Full again, while stopped: the next start refuses to open the store and says why.
  ballast(join(mnt, 'ballast'), freeBytes(mnt) - 64 * MiB);
  const refused = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage', `rocksdb:${data}`, ...extraArgs]);
  assert.deepEqual(await refused.waitForExit(), { code: 1, signal: null });
  assert.match(refused.stderr, /storage_open_failed code=no_space/);
  assert.match(refused.stderr, /under the reserve of 128\.0 MiB/);

  // dorm inspect reads it all the same.
  const inspect = new DormProcess(t, ['inspect', '--storage', `rocksdb:${data}`]);
  assert.equal((await inspect.waitForExit()).code, 0, inspect.stderr);

  rmSync(join(mnt, 'ballast'));
  const restarted = await startServe(t, { dataDir: mnt, extraArgs });
  assert.equal((await get(restarted.url, '/readyz')).status, 200);
  const k0 = sseMessages((await post(restarted.url, kvGet(2, 'k0'), { session })).text);
  assert.equal(k0[0].result.content[0].text, VALUE);
  restarted.proc.kill('SIGTERM');
  assert.equal((await restarted.proc.waitForExit()).code, 0);
});
