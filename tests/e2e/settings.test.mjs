// dorm serve's settings from a config file and DORM_* variables, as an operator uses them:
// a server that starts from its file, --print-config naming each value's source, and bad
// settings refused before anything is opened or bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DormProcess, tempDir } from './lib/dorm_process.mjs';
import { openSession, post } from './lib/mcp_http.mjs';

test('a server starts from its config file, with DORM_* variables and flags over it', async (t) => {
  const dir = tempDir(t);
  const config = join(dir, 'dorm.toml');
  writeFileSync(config, [
    '# what an operator writes',
    'listen = "127.0.0.1:1"             # replaced by the flag below',
    `storage = "rocksdb:${join(dir, 'from-file')}"  # replaced by DORM_STORAGE`,
    'fixtures = ["testing"]',
    'retry-ms = 250',
    'log-format = "json"',
    '',
  ].join('\n'));
  const storage = join(dir, 'from-env');
  const proc = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0'], {
    env: { DORM_CONFIG: config, DORM_STORAGE: `rocksdb:${storage}` },
  });
  const line = await proc.waitForLine(/^listening on http:\/\//);
  const url = new URL(line.slice('listening on '.length));
  assert.ok(existsSync(storage), 'the store named by DORM_STORAGE was opened');
  assert.ok(!existsSync(join(dir, 'from-file')), 'the file\'s storage was overridden');
  // log-format from the file: every stderr line so far is JSON.
  const logLines = proc.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.ok(logLines.length > 0);
  for (const l of logLines) JSON.parse(l);
  // fixtures and retry-ms from the file: the testing tools are offered, and priming says 250.
  const session = await openSession(url);
  const { text } = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { session });
  assert.match(text, /"name":"counter_get"/);
  assert.match(text, /^retry: 250$/m);
});

test('--print-config prints every setting with its source and exits without serving', async (t) => {
  const dir = tempDir(t);
  const config = join(dir, 'dorm.toml');
  writeFileSync(config, 'retry-ms = 250\nno-reap-at-boot = true\n');
  const proc = new DormProcess(t, ['serve', '--config', config, '--print-config', '--listen', '127.0.0.1:9'], {
    env: { DORM_DRAIN_TIMEOUT: '12' },
  });
  const { code } = await proc.waitForExit();
  assert.equal(code, 0, proc.stderr);
  const out = proc.stdoutLines.join('\n');
  assert.match(out, /^listen = '127\.0\.0\.1:9' {2}# command line$/m);
  assert.match(out, /^drain-timeout = 12 {2}# DORM_DRAIN_TIMEOUT$/m);
  assert.match(out, new RegExp(`^retry-ms = 250 {2}# ${config.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1$`, 'm'));
  assert.match(out, /^no-reap-at-boot = true {2}# .*dorm\.toml:2$/m);
  assert.match(out, /^storage = 'rocksdb:\.\/dorm-data' {2}# default$/m);
  // The printed file is a valid config: read back, it prints the same values.
  const printed = join(dir, 'printed.toml');
  writeFileSync(printed, out.replace(/^#.*$/gm, ''));
  const again = new DormProcess(t, ['serve', '--config', printed, '--print-config']);
  assert.equal((await again.waitForExit()).code, 0, again.stderr);
  // Defaults with units print as written ('7d'); read back, they print converted.
  const converted = { "'7d'": '604800', "'4m'": '240000', "'30s'": '30000' };
  const values = (text) => text.split('\n').filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/ {2}#.*$/, '').replace(/= ('\w+')$/, (m, v) => `= ${converted[v] ?? v}`));
  assert.deepEqual(values(again.stdoutLines.join('\n')), values(out));
});

test('a bad setting is refused with its place before anything is opened or bound', async (t) => {
  const dir = tempDir(t);
  const storage = join(dir, 'data');
  const config = join(dir, 'dorm.toml');
  writeFileSync(config, `storage = "rocksdb:${storage}"\nretry-ms = 250\nlisten-adress = "127.0.0.1:0"\n`);
  const typo = new DormProcess(t, ['serve', '--config', config]);
  assert.equal((await typo.waitForExit()).code, 2);
  assert.match(typo.stderr, new RegExp(`dorm\\.toml:3: unknown key 'listen-adress'`));
  assert.ok(!existsSync(storage), 'nothing was created');

  const badEnv = new DormProcess(t, ['serve', '--storage', `rocksdb:${storage}`], { env: { DORM_RETRY_MS: '0' } });
  assert.equal((await badEnv.waitForExit()).code, 2);
  assert.match(badEnv.stderr, /DORM_RETRY_MS: --retry-ms: /);
  assert.ok(!existsSync(storage), 'nothing was created');
});
