// MCP 2026-07-28 beside 2025-11-25 on one endpoint (`dorm serve --modern-era`):
//  - the conformance tool's pre-release line (0.2.0-alpha.12, installed as
//    `conformance-modern`) with the requirements of each revision against one server;
//  - the official TypeScript SDK v2 client pinned to 2026-07-28 (tools, a two-round
//    input_required flow through its elicitation handler) and the v1 client, which still
//    gets 2025-11-25 from the same server;
//  - a requestState issued before a SIGKILL: accepted after the restart, exactly once;
//  - a task whose work a SIGKILL stopped: failed with server_restart at the first
//    tasks/get after the restart, never left working;
//  - the SDK v2 client with the official Tasks extension client
//    (@modelcontextprotocol/ext-tasks) runs tasks to completion, one through tasks/update;
//  - code mode: `execute` whose approval the SDK v2 client answers through its
//    elicitation handler, and an execution paused across a SIGKILL that the retry
//    replays (each tool ran once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { startServe, tempDir } from './lib/dorm_process.mjs';
import { openStream, sseMessages } from './lib/mcp_http.mjs';
import {
  TOOL_MODERN, TOOL_MS, counts, describeCheck, listScenarios, readChecks, runTool, scenarioOf, tail,
} from './lib/conformance.mjs';

const SERVE_ARGS = ['--fixtures', 'conformance', '--modern-era'];
const MODERN = '2026-07-28';

// The server scenarios `--requirements REVISION` runs, scored or not.
function requiredServerScenarios(revision) {
  const out = listScenarios(TOOL_MODERN, ['--server', '--requirements', revision]);
  const names = new Set();
  let inServer = false;
  for (const line of out.split('\n')) {
    if (/^Server scenarios/.test(line)) inServer = true;
    else if (/^Client scenarios/.test(line) || /^\S/.test(line)) inServer = /^Server scenarios/.test(line);
    const m = line.match(/^\s+- (\S+)(?: \[(\w+)\])?\s*$/);
    if (m && (m[2] === 'server' || (inServer && m[2] === undefined))) names.add(m[1]);
  }
  return [...names];
}

async function judge(t, revision) {
  const expected = requiredServerScenarios(revision);
  assert.ok(expected.length >= 30, `the tool lists only ${expected.length} server scenarios for ${revision}`);
  const { proc, url } = await startServe(t, { extraArgs: SERVE_ARGS });
  const outDir = tempDir(t);
  const run = await runTool(TOOL_MODERN, url.href, ['--requirements', revision], outDir, 2 * TOOL_MS);
  const { files, checks } = readChecks(outDir);
  const context = () => `\n--- conformance output (exit ${run.code ?? run.signal}) ---\n${tail(run.output)}` +
    `\n--- dorm stderr ---\n${tail(proc.stderr, 15)}`;
  assert.ok(!run.timedOut, `conformance still running after ${2 * TOOL_MS} ms; killed${context()}`);
  assert.ok(proc.running(), `dorm exited during the run${context()}`);
  const ran = new Set(files.map(scenarioOf));
  assert.deepEqual(expected.filter((s) => !ran.has(s)), [], `scenarios without checks.json${context()}`);
  for (const scenario of expected) {
    const own = files.filter((f) => scenarioOf(f) === scenario).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')));
    // The tool itself skips some scenarios whole (tasks-status-notifications waits for a
    // harness that listens on subscriptions/listen): reported, not counted as a pass.
    if (own.length > 0 && own.every((c) => c.status === 'SKIPPED')) {
      t.diagnostic(`${scenario}: every check SKIPPED by the tool`);
      continue;
    }
    assert.ok(own.some((c) => c.status === 'SUCCESS'), `${scenario}: no SUCCESS among ${own.length} checks`);
  }
  t.diagnostic(`${revision}: ${counts(checks)} in ${files.length} scenarios`);
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  assert.equal(bad.length, 0, `${bad.length} check(s) failed or warned:\n${bad.map(describeCheck).join('\n')}${context()}`);
  return checks;
}

test('conformance alpha.12 --requirements 2026-07-28 (Tasks scenarios included): no FAILURE or WARNING',
  { timeout: 4 * TOOL_MS }, async (t) => {
    const checks = await judge(t, MODERN);
    // The checks that carry the revision's core rules, present and passing.
    for (const id of ['sep-2575-server-implements-discover', 'sep-2575-server-unsupported-version-error',
      'sep-2575-http-server-header-mismatch-400', 'sep-2575-server-rejects-undeclared-capability',
      'sep-2322-multi-round-r3', 'sep-2322-reject-tampered-state', 'sep-2663-tasks-get-status-completed',
      'tasks-mrtr-partial-fulfillment', 'sep-2663-mrtr-synchronous-before-task-creation',
      'sep-2575-server-sends-subscription-ack', 'sep-2575-server-honors-notification-filter']) {
      const found = checks.filter((c) => c.id.startsWith(id));
      assert.ok(found.length > 0 && found.every((c) => c.status === 'SUCCESS'),
        `${id}: ${found.map((c) => c.status).join(', ') || 'missing'}`);
    }
  });

test('conformance alpha.12 --requirements 2025-11-25 against the same dual-era server: no FAILURE or WARNING',
  { timeout: 4 * TOOL_MS }, async (t) => {
    await judge(t, '2025-11-25');
  });

test('SDK v2 pinned to 2026-07-28 calls tools and answers two rounds of input_required; SDK v1 still gets 2025-11-25',
  { timeout: 4 * TOOL_MS }, async (t) => {
    const { url } = await startServe(t, { extraArgs: ['--fixtures', 'testing,conformance', '--modern-era'] });
    const asked = [];
    const modern = new ClientV2({ name: 'e2e-v2', version: '1' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: MODERN } } });
    modern.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: request.params.message.includes('color') ? { color: 'blue' } : { name: 'Ada' } };
    });
    await modern.connect(new TransportV2(url));
    t.after(() => modern.close());
    assert.equal(modern.getNegotiatedProtocolVersion(), MODERN);
    const tools = await modern.listTools();
    assert.ok(tools.tools.some((tool) => tool.name === 'echo'));
    const echoed = await modern.callTool({ name: 'echo', arguments: { text: 'stateless' } });
    assert.equal(echoed.content[0].text, 'stateless');
    const rounds = await modern.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
    assert.equal(rounds.content[0].text, 'name "Ada", color "blue"');
    assert.deepEqual(asked, ['Step 1: What is your name?', 'Step 2: What is your favorite color?']);

    const legacy = new ClientV1({ name: 'e2e-v1', version: '1' });
    const transport = new TransportV1(url);
    await legacy.connect(transport);
    t.after(() => legacy.close());
    assert.equal(transport.protocolVersion, '2025-11-25');
    assert.ok(transport.sessionId, 'a 2025 client gets a session');
    const old = await legacy.callTool({ name: 'echo', arguments: { text: 'session' } });
    assert.equal(old.content[0].text, 'session');
  });

const TASKS = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } };

// One modern POST by hand; resolves with {status, body}. `name` is what Mcp-Name carries
// (params.name for tools/call, params.taskId for tasks/*).
async function modern(url, id, method, params, name, capabilities = { elicitation: {} }) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, 'Mcp-Name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0', id, method,
      params: {
        ...params,
        _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': capabilities },
      },
    }),
  });
  return { status: res.status, body: await res.json() };
}

const modernCall = (url, id, params, name) => modern(url, id, 'tools/call', { ...params, name }, name);

test('a requestState issued before a SIGKILL resumes after the restart, exactly once', { timeout: 4 * TOOL_MS }, async (t) => {
  const dataDir = tempDir(t);
  const first = await startServe(t, { dataDir, extraArgs: SERVE_ARGS });
  const tool = 'test_input_required_result_multi_round';
  const r1 = await modernCall(first.url, 1, { arguments: {} }, tool);
  assert.equal(r1.body.result.resultType, 'input_required');
  const state = r1.body.result.requestState;
  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();

  const second = await startServe(t, { dataDir, extraArgs: SERVE_ARGS });
  const answer = { step1: { action: 'accept', content: { name: 'Ada' } } };
  const r2 = await modernCall(second.url, 2, { arguments: {}, inputResponses: answer, requestState: state }, tool);
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  assert.deepEqual(Object.keys(r2.body.result.inputRequests), ['step2']);
  assert.notEqual(r2.body.result.requestState, state);
  const replay = await modernCall(second.url, 3, { arguments: {}, inputResponses: answer, requestState: state }, tool);
  assert.equal(replay.status, 400);
  assert.equal(replay.body.error.code, -32602);
  assert.equal(replay.body.id, 3);
});

test('a task whose work a SIGKILL stopped is failed with server_restart at the first poll after the restart',
  { timeout: 4 * TOOL_MS }, async (t) => {
    const dataDir = tempDir(t);
    const first = await startServe(t, { dataDir, extraArgs: SERVE_ARGS });
    const created = await modern(first.url, 1, 'tools/call', { name: 'slow_compute', arguments: { seconds: 600 } },
      'slow_compute', TASKS);
    assert.equal(created.body.result.resultType, 'task', JSON.stringify(created.body));
    const taskId = created.body.result.taskId;
    const working = await modern(first.url, 2, 'tasks/get', { taskId }, taskId, TASKS);
    assert.equal(working.body.result.status, 'working');
    first.proc.kill('SIGKILL');
    await first.proc.waitForExit();

    const second = await startServe(t, { dataDir, extraArgs: SERVE_ARGS });
    assert.match(second.proc.stderr, /tasks_woken tasks=1/);
    const polled = await modern(second.url, 3, 'tasks/get', { taskId }, taskId, TASKS);
    assert.equal(polled.body.result.status, 'failed', JSON.stringify(polled.body));
    assert.equal(polled.body.result.error.data.reason, 'server_restart');
    assert.equal(polled.body.result.error.data.retrySafe, false);
    // A task that did finish before the kill keeps its result across the restart.
    const quick = await modern(second.url, 4, 'tools/call', { name: 'slow_compute', arguments: { seconds: 1 } },
      'slow_compute', TASKS);
    const quickId = quick.body.result.taskId;
    let status = 'working';
    for (let i = 0; i < 100 && status === 'working'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await modern(second.url, 5 + i, 'tasks/get', { taskId: quickId }, quickId, TASKS)).body.result.status;
    }
    assert.equal(status, 'completed');
    second.proc.kill('SIGKILL');
    await second.proc.waitForExit();
    const third = await startServe(t, { dataDir, extraArgs: SERVE_ARGS });
    const kept = await modern(third.url, 200, 'tasks/get', { taskId: quickId }, quickId, TASKS);
    assert.equal(kept.body.result.status, 'completed');
    assert.equal(kept.body.result.result.content[0].text, 'computed work in 1 s');
  });

test('execute over 2026-07-28: SDK v2 approves through its elicitation handler; a paused execution survives a SIGKILL',
  { timeout: 4 * TOOL_MS }, async (t) => {
    const args = ['--fixtures', 'testing', '--modern-era', '--code-mode'];
    const dataDir = tempDir(t);
    const first = await startServe(t, { dataDir, extraArgs: args });
    const asked = [];
    const client = new ClientV2({ name: 'e2e-v2-code', version: '1' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: MODERN } } });
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: {} };
    });
    await client.connect(new TransportV2(first.url));
    const approved = await client.callTool({
      name: 'execute',
      arguments: { code: 'const n = await tools.counter_increment({}); return {n, tally: await tools.tally({})}' },
    });
    assert.equal(approved.structuredContent?.status, 'completed', JSON.stringify(approved));
    assert.deepEqual(approved.structuredContent.result, { n: 1, tally: 1 });
    assert.deepEqual(asked, ['Approve calling counter_increment with {}?']);
    await client.close();

    const code = 'const a = await tools.tally({}); const n = await tools.counter_increment({}); ' +
      'return {a, n, b: await tools.tally({})}';
    const r1 = await modernCall(first.url, 1, { arguments: { code } }, 'execute');
    assert.equal(r1.body.result?.resultType, 'input_required', JSON.stringify(r1.body));
    assert.deepEqual(Object.keys(r1.body.result.inputRequests), ['approval-2']);
    first.proc.kill('SIGKILL');
    await first.proc.waitForExit();

    const second = await startServe(t, { dataDir, extraArgs: args });
    const accept = { 'approval-2': { action: 'accept', content: {} } };
    const r2 = await modernCall(second.url, 2,
      { arguments: { code }, inputResponses: accept, requestState: r1.body.result.requestState }, 'execute');
    assert.equal(r2.status, 200, JSON.stringify(r2.body));
    // The first tally ran before the kill and was replayed from the journal, not run again.
    assert.deepEqual(r2.body.result.structuredContent.result, { a: 1, n: 1, b: 2 });
  });

test('SDK v2 with the official Tasks extension client runs tasks to completion, one answering through tasks/update',
  { timeout: 4 * TOOL_MS }, async (t) => {
    const { url } = await startServe(t, { extraArgs: SERVE_ARGS });
    const clientInfo = { name: 'e2e-v2-tasks', version: '1' };
    const client = new ClientV2(clientInfo, { capabilities: TASKS, versionNegotiation: { mode: { pin: MODERN } } });
    await client.connect(new TransportV2(url));
    t.after(() => client.close());
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    // The SDK's own codecs refuse task results toward a 2026-07-28 peer; the extension
    // package takes a raw dispatcher from its host for them: one modern POST per request.
    let ids = 0;
    const sent = [];
    const rawDispatch = async (request, options) => {
      sent.push(request.method);
      const name = request.params?.name ?? request.params?.taskId;
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': MODERN, 'Mcp-Method': request.method, ...(name !== undefined && { 'Mcp-Name': name }),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, ...request }),
        signal: options?.signal ?? AbortSignal.timeout(TOOL_MS),
      });
      const text = await res.text();
      return (res.headers.get('content-type') ?? '').startsWith('text/event-stream') ? sseMessages(text).at(-1) : JSON.parse(text);
    };
    const asked = [];
    const session = createTaskSessionFromClient(client, {
      endpointId: 'dorm-e2e', rawDispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo, clientCapabilities: TASKS },
      onInputRequest: async (request, context) => {
        asked.push([request.params.message, context.delivery]);
        return { action: 'accept', content: { confirm: true } };
      },
    });
    t.after(() => session.close());

    const slow = await session.callTool('slow_compute', { seconds: 1 });
    const first = (await slow.settle()).outcome;
    assert.equal(first.status, 'completed', JSON.stringify(first));
    assert.equal(resultFromTaskOutcome(first).content[0].text, 'computed work in 1 s');

    const confirm = await session.callTool('confirm_delete', { filename: 'a.txt' });
    const second = (await confirm.settle()).outcome;
    assert.equal(second.status, 'completed', JSON.stringify(second));
    assert.equal(resultFromTaskOutcome(second).content[0].text, 'deleted a.txt');
    assert.deepEqual(asked, [['Delete a.txt?', 'task-update']]);
    assert.ok(sent.includes('tasks/get') && sent.includes('tasks/update'), sent.join(', '));
  });

test('a listen stream that asked for a task hears its status change (notifications/tasks)',
  { timeout: 2 * TOOL_MS }, async (t) => {
    const { url } = await startServe(t, { extraArgs: SERVE_ARGS });
    const created = await modern(url, 1, 'tools/call', { name: 'slow_compute', arguments: { seconds: 600 } },
      'slow_compute', TASKS);
    const taskId = created.body.result.taskId;
    assert.ok(taskId, JSON.stringify(created.body));
    const listen = await openStream(url, 'POST', {
      version: MODERN,
      headers: { 'Mcp-Method': 'subscriptions/listen' },
      body: {
        jsonrpc: '2.0', id: 'watch', method: 'subscriptions/listen',
        params: {
          notifications: { taskIds: [taskId] },
          _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': TASKS },
        },
      },
    });
    t.after(() => listen.close());
    const ack = await listen.until((e) => e.message?.method === 'notifications/subscriptions/acknowledged');
    assert.deepEqual(ack.message.params.notifications, { taskIds: [taskId] });
    // The cancel happens after the acknowledgement: the change cannot be missed.
    const cancelled = await modern(url, 2, 'tasks/cancel', { taskId }, taskId, TASKS);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    const heard = await listen.until((e) => e.message?.method === 'notifications/tasks');
    assert.equal(heard.message.params.taskId, taskId);
    assert.equal(heard.message.params.status, 'cancelled');
    assert.equal(heard.message.params._meta['io.modelcontextprotocol/subscriptionId'], 'watch');
  });
