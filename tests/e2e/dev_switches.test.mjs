// The hidden development switches of `dorm serve`: --no-priming and --no-reaper exist to
// reproduce the incident that priming events and the restart reaper fix. They work, say
// so at start, and stay out of --help.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DormProcess, startServe } from './lib/dorm_process.mjs';
import { post, openSession } from './lib/mcp_http.mjs';

test('--no-priming and --no-reaper are hidden from serve --help', async (t) => {
  const help = new DormProcess(t, ['serve', '--help']);
  assert.equal((await help.waitForExit()).code, 0);
  const text = help.stdoutLines.join('\n');
  assert.ok(text.includes('--retry-ms'), text);
  assert.ok(!text.includes('--no-priming'), text);
  assert.ok(!text.includes('--no-reaper'), text);
});

test('--no-priming: a 2025-11-25 stream starts with its response; both switches log a dev_switch warning', async (t) => {
  const { proc, url } = await startServe(t, { extraArgs: ['--no-priming', '--no-reaper', '--log-format', 'json'] });
  const session = await openSession(url);
  const { res, text } = await post(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session });
  assert.equal(res.status, 200);
  assert.doesNotMatch(text, /^retry:/m);
  const ids = [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]);
  assert.equal(ids.length, 1);
  assert.match(ids[0], /^[0-9a-f]{16}-0$/);
  const switches = proc.stderr.split('\n').filter((l) => l.includes('"dev_switch"')).map((l) => JSON.parse(l).switch);
  assert.deepEqual(switches.sort(), ['--no-priming', '--no-reaper']);
});
