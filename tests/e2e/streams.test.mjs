// Live SSE streams of `dorm serve` over real sockets: the official SDK client through a
// proxy that cuts its connections mid-call, a server-initiated close (SSE polling), a
// reader that stops reading, concurrent streams, and cancellation. Every wait is bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServe, WAIT_MS } from './lib/dorm_process.mjs';
import { post, request, openSession, openStream } from './lib/mcp_http.mjs';

const ARGS = ['--fixtures', 'testing,conformance'];

// A TCP proxy in front of dorm that can cut every connection it carries (a network drop:
// the server stays up). It records the request head of each connection.
async function startProxy(t, port) {
  const sockets = new Set();
  const heads = [];
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port });
    sockets.add(client);
    sockets.add(upstream);
    let first = true;
    client.on('data', (chunk) => {
      if (first) heads.push(chunk.toString('latin1').split('\r\n\r\n')[0]);
      first = false;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    for (const [a, b] of [[client, upstream], [upstream, client]]) {
      a.on('close', () => { sockets.delete(a); b.destroy(); });
      a.on('error', () => b.destroy());
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { for (const s of sockets) s.destroy(); server.close(); });
  return {
    url: new URL(`http://127.0.0.1:${server.address().port}/mcp`),
    heads,
    cut() { for (const s of sockets) s.destroy(); },
  };
}

async function sdkClient(t, url) {
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: 'dorm-e2e-streams', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

const textOf = (result) => result.content.map((c) => c.text).join('');

test('SDK client: a proxy cuts the connection mid-sleep; the call resumes with no lost or duplicated progress', async (t) => {
  const { port } = await startServe(t, { extraArgs: ARGS });
  const proxy = await startProxy(t, port);
  const client = await sdkClient(t, proxy.url);
  const progress = [];
  let cutDone = false;
  const call = client.callTool({ name: 'sleep', arguments: { ms: 3000, step_ms: 250 } }, undefined, {
    timeout: WAIT_MS,
    onprogress: (p) => {
      progress.push(p.progress);
      if (p.progress === 750 && !cutDone) {
        cutDone = true;
        proxy.cut();
      }
    },
  });
  const result = await call;
  assert.equal(textOf(result), 'slept 3000 ms');
  assert.ok(cutDone, 'the proxy never cut the call');
  const expected = Array.from({ length: 12 }, (_, i) => (i + 1) * 250);
  assert.deepEqual(progress, expected);
  // The client came back with a GET carrying the last id it had seen.
  const resumes = proxy.heads.filter((h) => h.startsWith('GET') && /last-event-id:/i.test(h));
  assert.ok(resumes.length >= 1, `no resume GET among:\n${proxy.heads.join('\n---\n')}`);
});

test('SDK client: a server-initiated close (SSE polling) resumes after the retry hint and gets the result', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const client = await sdkClient(t, url);
  const started = Date.now();
  const result = await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, { timeout: WAIT_MS });
  assert.equal(textOf(result), 'Reconnection test completed successfully');
  // The client waited for the retry hint (500 ms) before resuming: a lower bound, not a time budget.
  assert.ok(Date.now() - started >= 500);
});

// Reads an HTTP response with node:http, which stops reading the socket while the
// response is paused (real backpressure, unlike fetch).
function rawCall(port, session, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, path: '/mcp', method: 'POST',
      headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-session-id': session,
      },
    }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

function eventsOf(text) {
  const out = [];
  for (const block of text.split('\n\n').slice(0, -1)) {
    const id = block.split('\n').find((l) => l.startsWith('id: '))?.slice(4);
    const data = block.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
    out.push({ id, message: data ? JSON.parse(data) : null });
  }
  return out;
}

test('a client that reads nothing while 2 MiB of progress is produced is cut off; a resume delivers every event exactly once', async (t) => {
  const { url, port, proc } = await startServe(t, { extraArgs: ARGS });
  const session = await openSession(url);
  const res = await rawCall(port, session, {
    jsonrpc: '2.0', id: 7, method: 'tools/call',
    params: { name: 'flood', arguments: { count: 64, bytes: 32768, interval_ms: 5 }, _meta: { progressToken: 'f' } },
  });
  assert.equal(res.statusCode, 200);
  res.setEncoding('utf8');
  let text = '';
  // Read up to the priming event, then stop reading.
  await new Promise((resolve) => {
    const onData = (chunk) => {
      text += chunk;
      if (text.includes('\n\n')) { res.off('data', onData); res.pause(); resolve(); }
    };
    res.on('data', onData);
  });
  await proc.waitForStderr(/sse_slow_reader_closed/);
  // Now read what reached this client before the cut, up to the end of the connection.
  await new Promise((resolve) => {
    res.on('data', (chunk) => { text += chunk; });
    res.on('end', resolve);
    res.on('close', resolve);
    res.on('error', resolve);
    res.resume();
  });
  const seen = eventsOf(text);
  const progressSeen = seen.filter((e) => e.message).length;
  assert.ok(progressSeen < 64, `the cut client still got all ${progressSeen} events`);
  assert.ok(!seen.some((e) => e.message?.id === 7), 'the cut connection carried the result');
  const last = seen.at(-1).id;
  const resumed = await openStream(url, 'GET', { session, lastEventId: last });
  assert.equal(resumed.res.status, 200);
  assert.equal(await resumed.ended, true);
  const all = [...seen.filter((e) => e.message).map((e) => e.message), ...resumed.messages()];
  const progress = all.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress);
  assert.deepEqual(progress, Array.from({ length: 64 }, (_, i) => i + 1));
  const results = all.filter((m) => m.id === 7);
  assert.equal(results.length, 1);
  assert.equal(results[0].result.content[0].text, 'sent 64 progress notifications');
});

test('two concurrent POST streams and the standalone GET never carry the same message twice', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const session = await openSession(url);
  const get = await openStream(url, 'GET', { session });
  assert.equal(get.res.status, 200);
  const call = (id, ms, step) => openStream(url, 'POST', {
    session,
    body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'sleep', arguments: { ms, step_ms: step }, _meta: { progressToken: id } } },
  });
  const [a, b] = await Promise.all([call('a', 1500, 100), call('b', 1200, 50)]);
  await a.until((e) => e.message?.method === 'notifications/progress');
  const announced = await post(url, { jsonrpc: '2.0', id: 'n', method: 'tools/call', params: { name: 'announce', arguments: { text: 'hello' } } }, { session });
  assert.equal(announced.res.status, 200);
  assert.equal(await a.ended, true);
  assert.equal(await b.ended, true);
  await get.until((e) => e.message?.params?.data === 'hello');
  get.close();
  const seen = new Map();
  for (const [name, s] of [['get', get], ['a', a], ['b', b]]) {
    for (const m of s.messages()) {
      const key = JSON.stringify(m);
      assert.ok(!seen.has(key), `${key} on ${name} and ${seen.get(key)}`);
      seen.set(key, name);
    }
  }
  assert.equal(a.messages().length, 15 + 1);
  assert.equal(b.messages().length, 24 + 1);
  assert.deepEqual(get.messages().map((m) => m.method), ['notifications/message']);
  // Event ids are unique across the session's streams.
  const ids = [get, a, b].flatMap((s) => s.events.map((e) => e.id));
  assert.equal(new Set(ids).size, ids.length);
});

test('cancellation ends the stream with no response; a resume afterwards is 204', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const session = await openSession(url);
  const s = await openStream(url, 'POST', {
    session,
    body: { jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'sleep', arguments: { ms: 20000, step_ms: 100 }, _meta: { progressToken: 1 } } },
  });
  await s.until((e) => e.message?.method === 'notifications/progress');
  const cancel = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 41, reason: 'test' } }, { session });
  assert.equal(cancel.res.status, 202);
  assert.equal(await s.ended, true);
  assert.ok(!s.messages().some((m) => m.id === 41), 'a response was sent for a cancelled request');
  const resumed = await request(url, 'GET', { session, headers: { 'last-event-id': s.events.at(-1).id } });
  assert.equal(resumed.res.status, 204);
  // A client response to a server request this process never issued: 202, dropped.
  const stray = await post(url, { jsonrpc: '2.0', id: 'never-issued', result: {} }, { session });
  assert.equal(stray.res.status, 202);
});
