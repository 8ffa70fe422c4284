// Streamable HTTP transport of `dorm serve`, with a raw client: every status the endpoint
// gives, identity and tokens (SIGHUP reload included), limits, and sessions that outlive
// a SIGKILL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { DormProcess, startServe, tempDir, WAIT_MS } from './lib/dorm_process.mjs';
import { post, request, sseMessages, initializeBody, openSession, ACCEPT_BOTH, openStream } from './lib/mcp_http.mjs';

const ping = (id = 1) => ({ jsonrpc: '2.0', id, method: 'ping' });
const sha256 = (s) => createHash('sha256').update(s).digest('hex');
const writeTokens = (file, entries) =>
  writeFileSync(file, JSON.stringify(entries.map(([token, user, org]) => ({ sha256: sha256(token), user, org }))));

// node:http rather than fetch where the Host header itself is under test.
function rawPost(url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers, timeout: WAIT_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => { text += c; }).on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

test('initialize, initialized, ping: 200 SSE, 202, {} — with a visible-ASCII session id', async (t) => {
  const { url } = await startServe(t);
  const { res, text } = await post(url, initializeBody());
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const session = res.headers.get('mcp-session-id');
  assert.match(session, /^[\x21-\x7e]{32,}$/);
  const [init] = sseMessages(text);
  assert.equal(init.id, 1);
  assert.equal(init.result.protocolVersion, '2025-11-25');
  assert.equal(init.result.serverInfo.name, 'dorm');

  const note = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session, version: '2025-11-25' });
  assert.equal(note.res.status, 202);
  assert.equal(note.text, '');
  const p = await post(url, ping(2), { session, version: '2025-11-25' });
  assert.equal(p.res.status, 200);
  assert.deepEqual(sseMessages(p.text), [{ jsonrpc: '2.0', id: 2, result: {} }]);
  // Any supported revision is accepted in the header, whatever was negotiated; absent too.
  assert.equal((await post(url, ping(3), { session, version: '2025-03-26' })).res.status, 200);
  assert.equal((await post(url, ping(4), { session })).res.status, 200);
  // A second initialize gets a new session.
  const again = await post(url, initializeBody());
  assert.notEqual(again.res.headers.get('mcp-session-id'), session);
});

test('every refusal: 405, 406, 415, 400 (version, session, body, batch, discover), 404, 403', async (t) => {
  const { url } = await startServe(t);
  const session = await openSession(url);

  const put = await request(url, 'PUT', { session });
  assert.equal(put.res.status, 405);
  assert.equal(put.res.headers.get('allow'), 'GET, POST, DELETE');

  assert.equal((await post(url, ping(), { session, headers: { accept: 'application/json' } })).res.status, 406);
  assert.equal((await request(url, 'GET', { session, headers: { accept: 'application/json' } })).res.status, 406);
  assert.equal((await post(url, ping(), { session, headers: { 'content-type': 'text/plain' } })).res.status, 415);

  const badVersion = await post(url, ping(), { session, version: '1999-01-01' });
  assert.equal(badVersion.res.status, 400);
  assert.match(badVersion.text, /2025-11-25/);

  const noSession = await post(url, ping());
  assert.equal(noSession.res.status, 400);
  assert.equal((await request(url, 'GET')).res.status, 400);
  assert.equal((await request(url, 'DELETE')).res.status, 400);

  // A 2026-07-28 client's probe: a plain 400, never -32020..-32022 (they would give up).
  const discover = await post(url, { jsonrpc: '2.0', id: 1, method: 'server/discover' }, { version: '2026-07-28' });
  assert.equal(discover.res.status, 400);
  const code = JSON.parse(discover.text).error.code;
  assert.ok(code > -32020 || code < -32022, `code ${code}`);

  const unknown = await post(url, ping(), { session: 'f'.repeat(32) });
  assert.equal(unknown.res.status, 404);
  assert.equal(JSON.parse(unknown.text).error.code, -32001);

  const badJson = await post(url, '{"jsonrpc": "2.0", ', { session });
  assert.equal(badJson.res.status, 400);
  assert.equal(JSON.parse(badJson.text).error.code, -32700);
  const notRpc = await post(url, { hello: 'world' }, { session });
  assert.equal(notRpc.res.status, 400);
  assert.equal(JSON.parse(notRpc.text).error.code, -32600);
  const batch = await post(url, [ping(1), ping(2)], { session });
  assert.equal(batch.res.status, 400);
  assert.equal(JSON.parse(batch.text).error.code, -32600);

  // Origin: absent is fine, loopback is fine, anything else 403.
  assert.equal((await post(url, ping(), { session, headers: { origin: `http://127.0.0.1:${url.port}` } })).res.status, 200);
  assert.equal((await post(url, ping(), { session, headers: { origin: 'http://evil.example.com' } })).res.status, 403);
  const evilHost = await rawPost(url, JSON.stringify(initializeBody()), {
    host: 'evil.example.com', 'content-type': 'application/json', accept: ACCEPT_BOTH,
  });
  assert.equal(evilHost.status, 403);

  // GET without Last-Event-ID on a live session opens its standalone SSE stream.
  const standalone = await openStream(url, 'GET', { session });
  assert.equal(standalone.res.status, 200);
  assert.equal(standalone.res.headers.get('content-type'), 'text/event-stream');
  standalone.close();
});

test('a 2025-03-26 session may send batches', async (t) => {
  const { url } = await startServe(t);
  const session = await openSession(url, { protocolVersion: '2025-03-26' });
  const { res, text } = await post(url, [ping(1), ping(2)], { session });
  assert.equal(res.status, 200);
  assert.deepEqual(sseMessages(text).map((m) => m.id).sort(), [1, 2]);
});

test('DELETE ends the session: 200, then 404 for everything on it', async (t) => {
  const { url } = await startServe(t);
  const session = await openSession(url);
  assert.equal((await request(url, 'DELETE', { session })).res.status, 200);
  assert.equal((await post(url, ping(), { session })).res.status, 404);
  assert.equal((await request(url, 'DELETE', { session })).res.status, 404);
});

test('limits: a body over 4 MiB gets 413, a header over the limit 431', async (t) => {
  const { url } = await startServe(t);
  const session = await openSession(url);
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(4 * 1024 * 1024) } });
  assert.equal((await post(url, big, { session })).res.status, 413);
  const { res } = await post(url, ping(), { session, headers: { 'x-pad': 'y'.repeat(20 * 1024) } });
  assert.equal(res.status, 431);
  // A body just under the limit is read and answered.
  const fits = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(4 * 1024 * 1024 - 200) } });
  assert.equal((await post(url, fits, { session })).res.status, 200);
});

test('tokens: 401 without or with a bad token; a session used by another identity is 404', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'tokens.json');
  writeTokens(file, [['token-a', 'alice', 'acme'], ['token-b', 'bob', 'acme']]);
  const { url, proc } = await startServe(t, { extraArgs: ['--auth-tokens', file] });

  const missing = await post(url, initializeBody());
  assert.equal(missing.res.status, 401);
  assert.match(missing.res.headers.get('www-authenticate'), /^Bearer/);
  const bad = await post(url, initializeBody(), { token: 'token-z' });
  assert.equal(bad.res.status, 401);
  assert.match(bad.res.headers.get('www-authenticate'), /^Bearer/);

  const session = await openSession(url, { token: 'token-a' });
  assert.equal((await post(url, ping(), { session, token: 'token-a' })).res.status, 200);
  const foreign = await post(url, ping(), { session, token: 'token-b' });
  const unknown = await post(url, ping(), { session: 'e'.repeat(32), token: 'token-b' });
  assert.equal(foreign.res.status, 404);
  assert.equal(foreign.text, unknown.text);
  await proc.waitForStderr(/session_owner_mismatch session=\S+ owner_user=alice/);
});

test('SIGHUP reloads the token file: the removed token gets 401, the new one works', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'tokens.json');
  writeTokens(file, [['old-token', 'alice', '']]);
  const { url, proc } = await startServe(t, { extraArgs: ['--auth-tokens', file] });
  assert.equal((await post(url, initializeBody(), { token: 'old-token' })).res.status, 200);

  writeTokens(file, [['new-token', 'alice', '']]);
  proc.kill('SIGHUP');
  await proc.waitForStderr(/auth_tokens_reloaded/);
  assert.equal((await post(url, initializeBody(), { token: 'old-token' })).res.status, 401);
  assert.equal((await post(url, initializeBody(), { token: 'new-token' })).res.status, 200);

  // A broken file keeps the tokens in force and says why.
  writeFileSync(file, '[{"sha256": "nothex"}]');
  proc.kill('SIGHUP');
  await proc.waitForStderr(/auth_tokens_reload_failed/);
  assert.equal((await post(url, initializeBody(), { token: 'new-token' })).res.status, 200);
});

test('without --auth-tokens a non-loopback --listen is refused', async (t) => {
  const dir = tempDir(t);
  const proc = new DormProcess(t, ['serve', '--listen', '0.0.0.0:0', '--storage', `rocksdb:${join(dir, 'data')}`]);
  assert.equal((await proc.waitForExit()).code, 1);
  assert.match(proc.stderr, /reachable from other machines.*--auth-tokens/);
});

test('SIGKILL and an immediate restart on the same port and data: the old session works without initialize', async (t) => {
  const first = await startServe(t);
  const session = await openSession(first.url);
  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();
  const second = await startServe(t, { dataDir: first.dataDir, listen: `127.0.0.1:${first.port}` });
  const p = await post(second.url, ping(7), { session, version: '2025-11-25' });
  assert.equal(p.res.status, 200);
  assert.deepEqual(sseMessages(p.text), [{ jsonrpc: '2.0', id: 7, result: {} }]);
  assert.equal((await post(second.url, ping(8), { session })).res.status, 200);
});

test('a request sent between bind and ready waits, then succeeds', async (t) => {
  const first = await startServe(t);
  const session = await openSession(first.url);
  // The second server binds at once but waits for the first one's storage lock.
  const second = new DormProcess(t, ['serve', '--listen', '127.0.0.1:0', '--storage',
    `rocksdb:${join(first.dataDir, 'data')}`, '--lock-wait', '30']);
  const [, port] = await second.waitForStderr(/bound address=127\.0\.0\.1:(\d+)/);
  await second.waitForStderr(/storage_locked_waiting/);
  const base = new URL(`http://127.0.0.1:${port}/mcp`);
  assert.equal((await fetch(new URL('/readyz', base), { signal: AbortSignal.timeout(WAIT_MS) })).status, 503);
  const pending = post(base, ping(9), { session });
  let settled = false;
  pending.finally(() => { settled = true; });
  // Still waiting after a round trip to the same server: /healthz answers, the request does not.
  assert.equal((await fetch(new URL('/healthz', base), { signal: AbortSignal.timeout(WAIT_MS) })).status, 200);
  assert.equal(settled, false);
  first.proc.kill('SIGTERM');
  const { res, text } = await pending;
  assert.equal(res.status, 200);
  assert.deepEqual(sseMessages(text), [{ jsonrpc: '2.0', id: 9, result: {} }]);
  await second.waitForLine(/^listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/);
});

test('responses are resumable streams: priming with --retry-ms, ids <stream>-<seq>, resume and 204 by Last-Event-ID', async (t) => {
  const { url } = await startServe(t, { extraArgs: ['--retry-ms', '250'] });
  const session = await openSession(url);
  const { text } = await post(url, ping(5), { session });
  const lines = text.split('\n');
  assert.match(lines[0], /^id: [0-9a-f]{16}-0$/);
  assert.equal(lines[1], 'retry: 250');
  assert.equal(lines[2], 'data: ');
  const ids = [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]);
  assert.equal(ids.length, 2);
  assert.equal(ids[1], ids[0].replace(/-0$/, '-1'));

  const resumed = await request(url, 'GET', { session, headers: { 'last-event-id': ids[0] } });
  assert.equal(resumed.res.status, 200);
  assert.deepEqual(sseMessages(resumed.text), [{ jsonrpc: '2.0', id: 5, result: {} }]);
  assert.equal((await request(url, 'GET', { session, headers: { 'last-event-id': ids[1] } })).res.status, 204);
  const other = await openSession(url);
  const foreign = await request(url, 'GET', { session: other, headers: { 'last-event-id': ids[0] } });
  const junk = await request(url, 'GET', { session: other, headers: { 'last-event-id': 'junk' } });
  assert.equal(foreign.res.status, 400);
  assert.equal(foreign.text, junk.text);
});
