// MCP 2026-07-28 beside 2025-11-25 on one endpoint (`dorm serve --modern-era`):
//  - the conformance tool's pre-release line (0.2.0-alpha.12, installed as
//    `conformance-modern`) with the requirements of each revision against one server;
//  - the official TypeScript SDK v2 client pinned to 2026-07-28 (tools, a two-round
//    input_required flow through its elicitation handler) and the v1 client, which still
//    gets 2025-11-25 from the same server;
//  - a requestState issued before a SIGKILL: accepted after the restart, exactly once.
// The Tasks extension is not implemented yet: its scenarios (tasks-*) are the only ones
// left out of the judgement, by name (docs/mcp.md, "Two eras on one endpoint").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServe, tempDir } from './lib/dorm_process.mjs';
import {
  TOOL_MODERN, TOOL_MS, counts, describeCheck, listScenarios, readChecks, runTool, scenarioOf, tail,
} from './lib/conformance.mjs';

const SERVE_ARGS = ['--fixtures', 'conformance', '--modern-era'];
const MODERN = '2026-07-28';
const notYet = (scenario) => scenario.startsWith('tasks-');

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
  const judged = files.filter((f) => !notYet(scenarioOf(f)));
  for (const scenario of expected.filter((s) => !notYet(s))) {
    const own = files.filter((f) => scenarioOf(f) === scenario).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')));
    assert.ok(own.some((c) => c.status === 'SUCCESS'), `${scenario}: no SUCCESS among ${own.length} checks`);
  }
  const mine = judged.flatMap((f) => JSON.parse(readFileSync(f, 'utf8')));
  t.diagnostic(`${revision}: ${counts(mine)} in ${judged.length} scenarios (${files.length - judged.length} tasks-* not judged)`);
  const bad = mine.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  assert.equal(bad.length, 0, `${bad.length} check(s) failed or warned:\n${bad.map(describeCheck).join('\n')}${context()}`);
  return checks;
}

test('conformance alpha.12 --requirements 2026-07-28: every scenario but tasks-* passes, no FAILURE or WARNING',
  { timeout: 4 * TOOL_MS }, async (t) => {
    const checks = await judge(t, MODERN);
    // The checks that carry the revision's core rules, present and passing.
    for (const id of ['sep-2575-server-implements-discover', 'sep-2575-server-unsupported-version-error',
      'sep-2575-http-server-header-mismatch-400', 'sep-2575-server-rejects-undeclared-capability',
      'sep-2322-multi-round-r3', 'sep-2322-reject-tampered-state']) {
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

// One modern POST by hand; resolves with {status, body}.
async function modernCall(url, id, params, name) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: {
        ...params, name,
        _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } },
      },
    }),
  });
  return { status: res.status, body: await res.json() };
}

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
