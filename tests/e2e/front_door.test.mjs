// The HTTP front door of `dorm serve`, over raw sockets so that what is on the wire is
// under test: who is calling is checked before a body is read, a single-valued header sent
// twice is refused while a list split over lines is joined, and no answer to HEAD carries
// a body. Every wait is bounded by WAIT_MS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, startServe, tempDir, WAIT_MS } from './lib/dorm_process.mjs';
import { ACCEPT_BOTH, openSession } from './lib/mcp_http.mjs';

const TOKEN = 'front-door-token';

async function startWithToken(t) {
  const file = join(tempDir(t), 'tokens.json');
  const sha256 = createHash('sha256').update(TOKEN).digest('hex');
  writeFileSync(file, JSON.stringify([{ sha256, user: 'alice', org: '' }]));
  return startServe(t, { extraArgs: ['--auth-tokens', file] });
}

// Writes `bytes` on a new connection and collects what comes back until the server ends
// the connection or `done(received)` holds. Rejects after WAIT_MS.
async function exchange(port, bytes, done = () => false) {
  const socket = await connect(port);
  return new Promise((resolve, reject) => {
    let received = '';
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve(received); };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${WAIT_MS} ms; got ${JSON.stringify(received.slice(0, 200))}`));
    }, WAIT_MS);
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { received += chunk; if (done(received)) finish(); });
    socket.on('end', finish);
    socket.on('error', (e) => { clearTimeout(timer); reject(e); });
    socket.write(bytes);
  });
}

// The status and the text after the header of the first response in `text`.
function firstResponse(text) {
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete response header in ${JSON.stringify(text.slice(0, 200))}`);
  const head = text.slice(0, end);
  return { status: Number(head.split(' ')[1]), head, rest: text.slice(end + 4) };
}

// A POST /mcp as header lines (each "Name: value"), with Content-Length and the body.
function postBytes(lines, body) {
  return ['POST /mcp HTTP/1.1', ...lines, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', body].join('\r\n');
}

test('an unauthenticated POST is refused from its header: 401 while most of its body is unsent', async (t) => {
  const { port } = await startWithToken(t);
  // Under the 4 MiB body limit and far over it: either way only the header and 64 KiB of
  // the body are ever sent, so a server that read the body before checking the caller
  // would wait (the first) or answer 413 (the second).
  for (const length of [1024 * 1024, 10 * 1024 * 1024]) {
    const head = ['POST /mcp HTTP/1.1', `Host: 127.0.0.1:${port}`, `Accept: ${ACCEPT_BOTH}`,
      'Content-Type: application/json', `Content-Length: ${length}`, '', ''].join('\r\n');
    const text = await exchange(port, head + 'x'.repeat(64 * 1024));
    const { status, head: answer, rest } = firstResponse(text);
    assert.equal(status, 401, `Content-Length ${length}`);
    assert.match(answer, /^www-authenticate: Bearer realm="dorm"$/im);
    assert.match(answer, /^connection: close$/im);
    assert.equal(JSON.parse(rest).error.code, -32000);
  }
  // With a good token the declared size is refused next, still before the body is sent.
  const head = ['POST /mcp HTTP/1.1', `Host: 127.0.0.1:${port}`, `Authorization: Bearer ${TOKEN}`,
    `Accept: ${ACCEPT_BOTH}`, 'Content-Type: application/json', `Content-Length: ${10 * 1024 * 1024}`, '', ''].join('\r\n');
  assert.equal(firstResponse(await exchange(port, head)).status, 413);
});

test('a single-valued header sent twice is 400; Accept split over two lines is one list', async (t) => {
  const { port, url } = await startWithToken(t);
  const session = await openSession(url, { token: TOKEN });
  const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' });
  const lines = {
    host: [`Host: 127.0.0.1:${port}`],
    origin: [`Origin: http://localhost:${port}`],
    auth: [`Authorization: Bearer ${TOKEN}`],
    accept: [`Accept: ${ACCEPT_BOTH}`],
    type: ['Content-Type: application/json'],
    session: [`Mcp-Session-Id: ${session}`],
  };
  const send = async (changes) => {
    const all = Object.values({ ...lines, ...changes }).flat();
    const { status, rest } = firstResponse(await exchange(port, postBytes(all, body)));
    return { status, rest };
  };
  // The rig: every header once is a ping answered.
  const fine = await send({});
  assert.equal(fine.status, 200);
  assert.match(fine.rest, /"id":5/);

  const repeats = {
    'mcp-session-id': { session: [`Mcp-Session-Id: ${session}`, 'Mcp-Session-Id: bogus-session-id-0000'] },
    host: { host: [`Host: 127.0.0.1:${port}`, 'Host: evil.example.com'] },
    origin: { origin: [`Origin: http://localhost:${port}`, 'Origin: http://evil.example.com'] },
    authorization: { auth: [`Authorization: Bearer ${TOKEN}`, `Authorization: Bearer ${TOKEN}`] },
    'content-length': { type: ['Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`] },
  };
  for (const [name, changes] of Object.entries(repeats)) {
    const { status, rest } = await send(changes);
    assert.equal(status, 400, name);
    const error = JSON.parse(rest).error;
    assert.equal(error.code, -32000, name);
    assert.match(error.message, new RegExp(`the ${name} header was sent more than once`), name);
  }
  // Two different lengths: the parser cannot frame the body at all.
  const conflicting = await send({ type: ['Content-Type: application/json', 'Content-Length: 3'] });
  assert.equal(conflicting.status, 400);

  const split = await send({ accept: ['Accept: application/json', 'Accept: text/event-stream'] });
  assert.equal(split.status, 200);
  assert.match(split.rest, /"id":5/);
});

test('no answer to HEAD carries a body, on any path: a pipelined GET stays in step', async (t) => {
  const { port } = await startWithToken(t);
  const expected = { '/healthz': 200, '/readyz': 200, '/nope': 404, '/mcp': 405 };
  for (const [path, want] of Object.entries(expected)) {
    const bytes = `HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n` +
      `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`;
    const text = await exchange(port, bytes);
    const head = firstResponse(text);
    assert.equal(head.status, want, path);
    assert.match(head.head, /^content-length: [1-9]\d*$/im, `${path}: the GET's length, not its body`);
    // Right after the HEAD's header: the GET's response, not a stray body.
    const next = firstResponse(head.rest);
    assert.equal(next.status, 200, `${path}: ${JSON.stringify(head.rest.slice(0, 80))}`);
    assert.equal(next.rest, 'ok\n', path);
  }
});
