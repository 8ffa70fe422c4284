// `dorm backup` of a store a running `dorm serve` is writing to, then `dorm restore` into
// a fresh store, for RocksDB and for SQLite: sessions keep storing values (kv_put) while
// the backup runs; a server on the restored store then has every session that existed and
// every write acknowledged before the backup started, and what it has of each session's
// writes is a prefix of them (one point in time). Also: `dorm inspect` reads the backup,
// and restore refuses a store in use or not empty, changing nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DormProcess, tempDir, WAIT_MS } from './lib/dorm_process.mjs';
import { post, sseMessages, openSession } from './lib/mcp_http.mjs';

const SESSIONS = 4;
// Writes every session has acknowledged before the backup starts, and after it ended (so
// the load ran through the whole backup).
const BEFORE = 15;
const AFTER = 3;

const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

// Runs `dorm ARGS` to completion; resolves with {code, stdout, stderr}.
async function run(t, args) {
  const proc = new DormProcess(t, args);
  const { code } = await proc.waitForExit(4 * WAIT_MS);
  return { code, stdout: proc.stdoutLines.join('\n'), stderr: proc.stderr };
}

async function serve(t, storage) {
  // --drain-timeout 0: a call still running at SIGTERM need not be waited for.
  const proc = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage', storage,
    '--fixtures', 'testing', '--drain-timeout', '0']);
  const line = await proc.waitForLine(/^listening on http:\/\//);
  return { proc, url: new URL(line.slice('listening on '.length)) };
}

async function stop(server) {
  server.proc.kill('SIGTERM');
  assert.deepEqual(await server.proc.waitForExit(), { code: 0, signal: null });
}

// The text of a tools/call result, or throws with what came instead.
async function toolText(url, session, id, name, args) {
  const { res, text } = await post(url, call(id, name, args), { session });
  assert.equal(res.status, 200, text);
  const message = sseMessages(text).at(-1);
  assert.ok(message?.result, text);
  return { isError: message.result.isError === true, text: message.result.content[0].text };
}

// One session storing w0, w1, ... in order, one call at a time, until stopped. `acked`
// counts the writes whose answer has arrived: w0 .. w(acked-1) are durable.
class Writer {
  constructor(url, session, index) {
    Object.assign(this, { url, session, index, acked: 0, stopped: false, waiters: [] });
    this.done = this.#loop();
  }

  value(i) { return `session ${this.index} write ${i}`; }

  async #loop() {
    for (let i = 0; !this.stopped; ++i) {
      const r = await toolText(this.url, this.session, 100 + i, 'kv_put', { key: `w${i}`, value: this.value(i) });
      assert.equal(r.isError, false, r.text);
      this.acked = i + 1;
      this.waiters = this.waiters.filter((w) => !w());
    }
  }

  // Resolves once `n` writes are acknowledged (bounded).
  untilAcked(n) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`session ${this.index}: ${this.acked} of ${n} writes acknowledged within ${WAIT_MS} ms`)), WAIT_MS);
      const check = () => {
        if (this.acked < n) return false;
        clearTimeout(timer);
        resolve();
        return true;
      };
      this.done.catch((e) => { clearTimeout(timer); reject(e); });
      if (!check()) this.waiters.push(check);
    });
  }
}

for (const [scheme, name] of [['rocksdb', 'data'], ['sqlite', 'data.sqlite']]) {
  test(`${scheme}: a backup taken under load restores every session and every acknowledged write`, async (t) => {
    const dir = tempDir(t);
    const storage = `${scheme}:${join(dir, name)}`;
    const server = await serve(t, storage);
    const sessions = [];
    for (let i = 0; i < SESSIONS; ++i) sessions.push(await openSession(server.url));
    const writers = sessions.map((s, i) => new Writer(server.url, s, i));
    await Promise.all(writers.map((w) => w.untilAcked(BEFORE)));

    // The backup point: what was acknowledged before `dorm backup` started.
    const ackedBefore = writers.map((w) => w.acked);
    const backupDir = join(dir, 'backup');
    const backup = await run(t, ['backup', '--store', storage, '--to', backupDir, '--json']);
    assert.equal(backup.code, 0, backup.stderr);
    // The server kept taking writes through the backup, and after it.
    const ackedAfter = writers.map((w) => w.acked);
    await Promise.all(writers.map((w, i) => w.untilAcked(ackedAfter[i] + AFTER)));
    for (const w of writers) w.stopped = true;
    await Promise.all(writers.map((w) => w.done));
    const attempted = writers.map((w) => w.acked);
    // A session made after the backup: it must not be in the restored store.
    const later = await openSession(server.url);

    // The manifest, printed and on disk.
    const manifest = JSON.parse(backup.stdout);
    assert.deepEqual(JSON.parse(readFileSync(join(backupDir, 'dorm-backup.json'), 'utf8')), manifest);
    assert.equal(manifest.format, 'dorm-backup');
    assert.equal(manifest.formatVersion, 1);
    assert.equal(manifest.backend, scheme);
    assert.equal(manifest.source, storage);
    assert.ok(manifest.generation >= 1, JSON.stringify(manifest));
    assert.ok(manifest.keys > SESSIONS * BEFORE, JSON.stringify(manifest));
    assert.ok(existsSync(join(backupDir, 'store')));

    // inspect reads the backup directory as a store, read-only.
    const inspected = await run(t, ['inspect', '--storage', backupDir, '--json']);
    assert.equal(inspected.code, 0, inspected.stderr);
    const report = JSON.parse(inspected.stdout);
    assert.equal(report.backup.backend, scheme);
    assert.equal(report.backup.keys, manifest.keys);
    assert.equal(report.runtime.generation, manifest.generation);
    assert.equal(report.sessions.total, SESSIONS);

    // Refusals, each changing nothing: the server's own store (its lock is held) and,
    // below, a store that is not empty.
    const busy = await run(t, ['restore', '--from', backupDir, '--storage', storage, '--force']);
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /it is in use \(stop the dorm serve that holds it first\); nothing was changed/);
    const check = await toolText(server.url, sessions[0], 9, 'kv_get', { key: `w${attempted[0] - 1}` });
    assert.equal(check.text, writers[0].value(attempted[0] - 1));
    await stop(server);

    const restoredStorage = `${scheme}:${join(dir, `restored-${name}`)}`;
    const restored = await run(t, ['restore', '--from', backupDir, '--storage', restoredStorage]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, new RegExp(`: ${manifest.keys} keys, ${manifest.bytes} bytes$`));
    const again = await run(t, ['restore', '--from', backupDir, '--storage', restoredStorage]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /it is not empty; --force replaces what it holds\. Nothing was changed/);

    // A server on the restored store has every session, every write acknowledged before
    // the backup, and of each session's writes a prefix.
    const second = await serve(t, restoredStorage);
    const restoredCounts = [];
    await Promise.all(writers.map(async (w, s) => {
      let present = 0;
      for (let i = 0; i < attempted[s]; ++i) {
        const r = await toolText(second.url, sessions[s], 1000 + i, 'kv_get', { key: `w${i}` });
        if (r.isError) {
          assert.match(r.text, /no value stored under/);
          continue;
        }
        assert.equal(r.text, w.value(i));
        assert.equal(present, i, `session ${s}: w${i} restored but not w${present}`);
        present = i + 1;
      }
      assert.ok(present >= ackedBefore[s], `session ${s}: ${present} writes restored, ${ackedBefore[s]} acknowledged before the backup`);
      restoredCounts[s] = present;
    }));
    t.diagnostic(`writes per session: acknowledged before the backup ${ackedBefore}, when it ended ${ackedAfter}, restored ${restoredCounts}, attempted ${attempted}`);
    const missing = await post(second.url, call(5, 'kv_get', { key: 'w0' }), { session: later });
    assert.equal(missing.res.status, 404, missing.text);
    await stop(second);
  });
}

test('backup and restore refuse what they cannot do, with the reason', async (t) => {
  const dir = tempDir(t);
  const memory = await run(t, ['backup', '--storage', 'memory:', '--to', join(dir, 'm')]);
  assert.equal(memory.code, 1);
  assert.match(memory.stderr, /memory: cannot be backed up: a memory store lives only inside the process/);
  assert.equal(existsSync(join(dir, 'm')), false);

  const missing = await run(t, ['backup', '--storage', `rocksdb:${join(dir, 'none')}`, '--to', join(dir, 'b')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no rocksdb store at/);
  assert.equal(existsSync(join(dir, 'b')), false);
  assert.equal(existsSync(join(dir, 'none')), false);

  const notBackup = await run(t, ['restore', '--from', dir, '--storage', `rocksdb:${join(dir, 'r')}`]);
  assert.equal(notBackup.code, 1);
  assert.match(notBackup.stderr, /no backup in .*: it has no dorm-backup\.json/);
  assert.equal(existsSync(join(dir, 'r')), false);
});
