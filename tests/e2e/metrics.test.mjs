// GET /metrics of a real `dorm serve`: a scripted workload with the official SDK client,
// then the values of the series it moved, the text checked by Prometheus' own
// `promtool check metrics`, the restart reaper's count after a SIGKILL, and who may scrape
// (loopback freely; from another address only with a metrics token).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServe, tempDir, WAIT_MS } from './lib/dorm_process.mjs';
import { openSession, openStream } from './lib/mcp_http.mjs';

const ARGS = ['--fixtures', 'testing', '--code-mode', '--engine-workers', '1', '--engine-slots', '2'];

async function connectClient(t, url) {
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: 'dorm-e2e-metrics', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

const metricsUrl = (url, host = '127.0.0.1') => `http://${host}:${url.port}/metrics`;

async function scrape(url, { host, token } = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const res = await fetch(metricsUrl(url, host), { headers, signal: AbortSignal.timeout(WAIT_MS) });
  return { res, text: await res.text() };
}

// series ("name" or "name{labels}", as the text writes it) -> value
function parse(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

// Scrapes until pred(series) holds (the store count runs in the background after start).
async function scrapeUntil(url, pred, what) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const { text } = await scrape(url);
    const series = parse(text);
    if (pred(series)) return { text, series };
    if (Date.now() > deadline) assert.fail(`no scrape where ${what} within ${WAIT_MS} ms:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// Runs `promtool check metrics` with `text` on stdin: {code, output}, bounded.
function promtool(text) {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('promtool did not finish')); }, WAIT_MS);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, output }); });
    child.stdin.end(text);
  });
}

const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

test('metrics: a scripted workload moves the series it should; promtool accepts the text', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const first = await scrape(url);
  assert.equal(first.res.status, 200);
  assert.equal(first.res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const before = parse(first.text);
  assert.equal(before.get('dorm_sessions_created_total'), 0);

  // Two SDK sessions: tool calls, code (one result, one failure, one paused for approval),
  // and the second session deleted (the SDK's terminateSession is a DELETE).
  const { client } = await connectClient(t, url);
  assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'one' } })), 'one');
  await client.callTool({ name: 'kv_put', arguments: { key: 'k', value: 'v' } });
  assert.equal(textOf(await client.callTool({ name: 'kv_get', arguments: { key: 'k' } })), 'v');
  const done = await client.callTool({ name: 'execute', arguments: { code: 'return 6 * 7' } });
  assert.equal(done.structuredContent.result, 42, textOf(done));
  const failed = await client.callTool({ name: 'execute', arguments: { code: 'throw new Error("nope")' } });
  assert.equal(failed.isError, true);
  // No elicitation capability: a tool that needs approval pauses the execution.
  const paused = await client.callTool({ name: 'execute', arguments: { code: 'return await tools.counter_increment({})' } });
  assert.equal(paused.structuredContent.status, 'waiting_for_interaction', textOf(paused));

  const second = await connectClient(t, url);
  await second.client.callTool({ name: 'echo', arguments: { text: 'two' } });
  await second.transport.terminateSession();

  // A GET stream of a raw session, open while we scrape.
  const session = await openSession(url);
  const stream = await openStream(url, 'GET', { session });
  t.after(() => stream.close());
  assert.equal(stream.res.status, 200);

  // The store count runs in the background after start, and the paused execution's owner
  // record is written by a turn of its own, after the call was answered.
  const { text, series } = await scrapeUntil(url,
    (s) => s.has('dorm_sessions_stored') && s.get('dorm_engine_executions_paused') === 1,
    'the store count is in and the paused execution counted');
  const get = (name) => {
    assert.ok(series.has(name), `${name} is missing:\n${text}`);
    return series.get(name);
  };
  // Sessions: three created (two SDK clients, one raw), one deleted.
  assert.equal(get('dorm_sessions_created_total'), 3);
  assert.equal(get('dorm_sessions_deleted_total'), 1);
  assert.equal(get('dorm_sessions_resident'), 2);
  assert.equal(get('dorm_sessions_stored'), 2);
  assert.equal(get('dorm_objects_activated_total{namespace="mcp-session"}'), 3);
  // HTTP: every initialized notification is answered 202; the rest of /mcp 200.
  assert.equal(get('dorm_http_requests_total{code="202"}'), 3);
  // At least: the first scrape, three initializes, seven calls, the DELETE, the GET stream.
  assert.ok(get('dorm_http_requests_total{code="200"}') >= 13, text);
  assert.ok(get('dorm_sse_streams_open') >= 1, 'the raw GET stream is open');
  // Turns and commits went up with the work.
  assert.ok(get('dorm_turn_duration_seconds_count') > before.get('dorm_turn_duration_seconds_count') + 10);
  assert.equal(get('dorm_turn_duration_seconds_bucket{le="+Inf"}'), get('dorm_turn_duration_seconds_count'));
  assert.ok(get('dorm_storage_commit_duration_seconds_count') > before.get('dorm_storage_commit_duration_seconds_count') + 10);
  assert.ok(get('dorm_storage_commit_bytes_total') > before.get('dorm_storage_commit_bytes_total'));
  assert.equal(get('dorm_storage_commit_failures_total'), 0);
  // The engine: one completed, one runtime_error, one paused (stored, cold).
  assert.ok(get('dorm_engine_executions_completed_total') >= 1);
  assert.equal(get('dorm_engine_executions_failed_total{kind="runtime_error"}'), 1);
  assert.equal(get('dorm_engine_executions_failed_total{kind="memory_limit"}'), 0);
  assert.equal(get('dorm_engine_executions_paused'), 1);
  assert.ok(get('dorm_alarms_pending') >= 3, 'every session holds its idle alarm');
  assert.equal(get('dorm_alarms_late'), 0);
  assert.equal(get('dorm_reaped_calls_total{reason="server_restart"}'), 0);

  const checked = await promtool(text);
  t.diagnostic(`promtool check metrics: exit ${checked.code}${checked.output ? `, output:\n${checked.output}` : ', no output'}`);
  assert.equal(checked.code, 0, checked.output);
  assert.equal(checked.output.trim(), '', 'promtool found nothing to say');
});

test('metrics: after a SIGKILL mid-call, the successor counts the call its boot reap answered', async (t) => {
  const firstRun = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const { client } = await connectClient(t, firstRun.url);
  let primed;
  const primedSeen = new Promise((resolve) => { primed = resolve; });
  client.callTool({ name: 'sleep', arguments: { ms: 30000 } }, undefined, {
    timeout: WAIT_MS, onresumptiontoken: (token) => primed(token),
  }).catch(() => {});  // the call dies with the process; its outcome is reaper.test.mjs's
  await primedSeen;  // the call is journaled: its stream's priming event has arrived
  firstRun.proc.kill('SIGKILL');
  await firstRun.proc.waitForExit();

  const secondRun = await startServe(t, { dataDir: firstRun.dataDir, extraArgs: ['--fixtures', 'testing'] });
  const { series, text } = await scrapeUntil(secondRun.url, (s) => s.has('dorm_sessions_stored'), 'the store count is in');
  assert.equal(series.get('dorm_reaped_calls_total{reason="server_restart"}'), 1, text);
  assert.equal(series.get('dorm_reaped_calls_total{reason="session_reset"}'), 0);
  assert.equal(series.get('dorm_sessions_stored'), 1, 'the session outlived the kill');
  assert.equal(series.get('dorm_sessions_created_total'), 0, 'counters are per process');
  assert.equal(series.get('dorm_generation'), 2);
});

// An address of this machine that is not loopback: a connection to it comes from it, so
// the server sees a peer that is not loopback without a second machine.
function outsideAddress() {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && !a.internal) return a.address;
    }
  }
  return undefined;
}

test('metrics: loopback scrapes freely; another address needs a metrics token', async (t) => {
  const address = outsideAddress();
  if (!address) {
    t.skip('this machine has no IPv4 address besides loopback');
    return;
  }
  const dir = tempDir(t);
  const sha = (s) => createHash('sha256').update(s).digest('hex');
  const authTokens = join(dir, 'tokens.json');
  writeFileSync(authTokens, JSON.stringify([{ sha256: sha('mcp-user-token'), user: 'alice' }]));
  const metricsTokens = join(dir, 'metrics-tokens.json');
  writeFileSync(metricsTokens, JSON.stringify([{ sha256: sha('scraper-token'), user: 'prometheus' }]));

  const { url } = await startServe(t, {
    listen: '0.0.0.0:0',
    extraArgs: ['--auth-tokens', authTokens, '--metrics-tokens', metricsTokens],
  });
  assert.equal((await scrape(url)).res.status, 200, 'loopback, no token');
  const bare = await scrape(url, { host: address });
  assert.equal(bare.res.status, 401);
  assert.equal(bare.res.headers.get('www-authenticate'), 'Bearer realm="dorm-metrics"');
  assert.match(bare.text, /--metrics-tokens/);
  assert.doesNotMatch(bare.text, /dorm_/);
  assert.equal((await scrape(url, { host: address, token: 'wrong' })).res.status, 401);
  // An MCP client's token is not a metrics token.
  assert.equal((await scrape(url, { host: address, token: 'mcp-user-token' })).res.status, 401);
  const allowed = await scrape(url, { host: address, token: 'scraper-token' });
  assert.equal(allowed.res.status, 200);
  assert.match(allowed.text, /^# HELP dorm_build_info /m);

  // Without a metrics token file, nobody off this machine may scrape.
  const closed = await startServe(t, { listen: '0.0.0.0:0', extraArgs: ['--auth-tokens', authTokens] });
  const refused = await scrape(closed.url, { host: address });
  assert.equal(refused.res.status, 403);
  assert.match(refused.text, /loopback/);
  assert.equal((await scrape(closed.url)).res.status, 200);
});
