// Graceful drain (docs/mcp.md#graceful-drain): what SIGTERM does to connections, running
// calls and the store, seen by raw clients. Every wait is bounded; the server's HTTP idle
// timeout is 60 s, longer than any bound here, so an exit within a bound was the drain's
// doing and not the idle timeout's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { connect, DormProcess, startServe, WAIT_MS } from './lib/dorm_process.mjs';
import { initializeBody, openSession, openStream, post, request } from './lib/mcp_http.mjs';

// One request on a keep-alive agent; resolves with {status, headers, body, socket}.
function keepAliveRequest(agent, url, { method = 'GET', path = url.pathname, headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: url.hostname, port: url.port, method, path, headers, timeout: WAIT_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => { text += c; }).on('end', () => {
        resolve({ status: res.statusCode, headers: res.headers, body: text, socket: req.socket });
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

// Resolves when `socket` closes (the server closed it); rejects after WAIT_MS.
function closedByServer(socket) {
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server left the idle connection open')), WAIT_MS);
    socket.once('close', () => { clearTimeout(timer); resolve(); });
  });
}

async function stopsAtOnceWithIdleKeepAlive(t, requestOnIt) {
  const { proc, url } = await startServe(t);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const answered = await requestOnIt(agent, url);
  assert.equal(answered.status, 200);
  assert.notEqual(answered.headers.connection, 'close');
  const closed = closedByServer(answered.socket);
  proc.kill('SIGTERM');
  await closed;
  const { code, signal } = await proc.waitForExit();
  assert.equal(signal, null);
  assert.equal(code, 0);
  assert.match(proc.stderr, /drain_started.*running_calls=0/);
}

test('SIGTERM closes an idle keep-alive connection left open after initialize, and exits 0', async (t) => {
  await stopsAtOnceWithIdleKeepAlive(t, (agent, url) => keepAliveRequest(agent, url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(initializeBody()),
  }));
});

test('SIGTERM closes a keep-alive connection that polls /healthz, and exits 0', async (t) => {
  await stopsAtOnceWithIdleKeepAlive(t, (agent, url) => keepAliveRequest(agent, url, { path: '/healthz' }));
});

const call = (id, ms) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'sleep', arguments: { ms, step_ms: ms } } });

// Starts a sleep call and waits for its priming event; returns the stream and that id.
async function startCall(url, session, id, ms) {
  const stream = await openStream(url, 'POST', { session, version: '2025-11-25', body: call(id, ms) });
  assert.equal(stream.res.status, 200);
  const priming = await stream.until((e) => e.id !== undefined);
  return { stream, primingId: priming.id };
}

test('a call that finishes within the drain window is answered normally, then the server exits 0', async (t) => {
  const { proc, url } = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--drain-timeout', '15'] });
  const session = await openSession(url);
  const { stream } = await startCall(url, session, 2, 1500);
  proc.kill('SIGTERM');
  await proc.waitForStderr(/drain_started.*running_calls=1/);
  const answer = await stream.until((e) => e.message?.id === 2);
  assert.deepEqual(answer.message.result.content, [{ type: 'text', text: 'slept 1500 ms' }]);
  assert.equal(await stream.ended, true);
  const { code } = await proc.waitForExit();
  assert.equal(code, 0);
  assert.doesNotMatch(proc.stderr, /drain_stopped_calls/);
});

test('a call outliving the drain window gets -32001 server_draining on its stream; the successor reaps nothing and replays it', async (t) => {
  const first = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--drain-timeout', '0.5'] });
  const session = await openSession(first.url);
  const { stream, primingId } = await startCall(first.url, session, 3, 600_000);
  first.proc.kill('SIGTERM');
  const answer = await stream.until((e) => e.message?.id === 3);
  assert.equal(answer.message.error.code, -32001);
  assert.equal(answer.message.error.data.reason, 'server_draining');
  assert.equal(answer.message.error.data.retrySafe, false);
  assert.equal(await stream.ended, true, 'the stream did not end cleanly');
  assert.equal((await first.proc.waitForExit()).code, 0);
  assert.match(first.proc.stderr, /drain_stopped_calls calls=1 sessions=1 failed=0/);

  const second = await startServe(t, { dataDir: first.dataDir, extraArgs: ['--fixtures', 'testing'] });
  assert.match(second.proc.stderr, /boot_reap records=0/);
  const resumed = await request(second.url, 'GET', { session, headers: { 'last-event-id': primingId } });
  assert.equal(resumed.res.status, 200);
  assert.match(resumed.text, /"reason":"server_draining"/);
  assert.doesNotMatch(resumed.text, /server_restart/);
});

test('a second SIGTERM cuts a long drain window short', async (t) => {
  const { proc, url } = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--drain-timeout', '3600'] });
  const session = await openSession(url);
  const { stream } = await startCall(url, session, 4, 600_000);
  proc.kill('SIGTERM');
  await proc.waitForStderr(/drain_started.*running_calls=1/);
  proc.kill('SIGTERM');
  const answer = await stream.until((e) => e.message?.id === 4);
  assert.equal(answer.message.error.data.reason, 'server_draining');
  assert.equal((await proc.waitForExit()).code, 0);
});

// Sends the head of a request without its final blank line; complete() sends the rest
// and resolves with the raw response text once the server closes the connection.
async function halfSentRequest(port, lines) {
  const socket = await connect(port);
  // Written to the kernel (on loopback: into the server's receive queue) before returning.
  await new Promise((resolve, reject) => socket.write(lines.join('\r\n') + '\r\n', (e) => (e ? reject(e) : resolve())));
  const answer = answerOf(socket);
  return { complete: (body = '') => answer.complete('\r\n' + body) };
}

// What the server sends on `socket` until it closes it; `complete(bytes)` sends the rest
// of the request first.
function answerOf(socket) {
  let text = '';
  socket.setEncoding('utf8').on('data', (c) => { text += c; });
  const closed = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the connection stayed open')), WAIT_MS);
    socket.on('close', () => { clearTimeout(timer); resolve(text); });
  });
  return { complete: (bytes) => { socket.write(bytes); return closed; } };
}

test('with no call running, SIGTERM still answers the requests of connections it had accepted: one silent so far, one half sent', async (t) => {
  const { proc, port } = await startServe(t);
  const host = `Host: 127.0.0.1:${port}`;
  const silent = answerOf(await connect(port));
  const half = await halfSentRequest(port, ['GET /healthz HTTP/1.1', host]);
  proc.kill('SIGTERM');
  // The stop has begun (nothing to drain): the server waits for these two requests before
  // it closes its connections, instead of resetting them.
  await proc.waitForStderr(/drain_started.*running_calls=0/);
  assert.match(await silent.complete(`GET /readyz HTTP/1.1\r\n${host}\r\n\r\n`), /^HTTP\/1\.1 503 /);
  assert.match(await half.complete(), /^HTTP\/1\.1 200 /);
  assert.equal((await proc.waitForExit()).code, 0);
  assert.doesNotMatch(proc.stderr, /requests_unanswered_at_stop/);
});

test('while draining: /readyz 503, initialize refused with 503, every response closes its connection', async (t) => {
  const { proc, url, port } = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--drain-timeout', '30'] });
  const session = await openSession(url);
  const { stream } = await startCall(url, session, 5, 600_000);
  const host = `Host: 127.0.0.1:${port}`;
  const readyz = await halfSentRequest(port, ['GET /readyz HTTP/1.1', host]);
  const init = JSON.stringify(initializeBody());
  const initialize = await halfSentRequest(port, ['POST /mcp HTTP/1.1', host, 'Content-Type: application/json',
    'Accept: application/json, text/event-stream', `Content-Length: ${Buffer.byteLength(init)}`]);
  proc.kill('SIGTERM');
  await proc.waitForStderr(/drain_started/);

  const ready = await readyz.complete();
  assert.match(ready, /^HTTP\/1\.1 503 /);
  assert.match(ready, /\r\nConnection: close\r\n/i);
  const refused = await initialize.complete(init);
  assert.match(refused, /^HTTP\/1\.1 503 /);
  assert.match(refused, /\r\nRetry-After: 1\r\n/i);
  assert.match(refused, /takes no new sessions/);
  assert.ok(proc.running(), 'the server stopped while a call was still running in its drain window');

  proc.kill('SIGTERM');
  assert.equal((await stream.until((e) => e.message?.id === 5)).message.error.data.reason, 'server_draining');
  assert.equal((await proc.waitForExit()).code, 0);
});

test('--reuse-port: a successor binds the same port while its predecessor drains, and serves once it exits', async (t) => {
  const first = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--reuse-port', '--drain-timeout', '1'] });
  const session = await openSession(first.url);
  const { stream } = await startCall(first.url, session, 6, 600_000);
  const successor = new DormProcess(t, ['serve', '--listen', `127.0.0.1:${first.port}`, '--reuse-port',
    '--storage', `rocksdb:${first.dataDir}/data`, '--fixtures', 'testing']);
  await successor.waitForStderr(/storage_locked_waiting/);
  first.proc.kill('SIGTERM');
  assert.equal((await stream.until((e) => e.message?.id === 6)).message.error.data.reason, 'server_draining');
  assert.equal((await first.proc.waitForExit()).code, 0);
  await successor.waitForLine(/^listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  const ping = await post(first.url, { jsonrpc: '2.0', id: 7, method: 'ping' }, { session, version: '2025-11-25' });
  assert.equal(ping.res.status, 200, 'the successor does not serve the session');
  assert.match(ping.text, /"id":7,"result":\{\}/);
});
