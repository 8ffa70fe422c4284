// The official MCP conformance tool (@modelcontextprotocol/conformance, pinned in
// package.json) against `dorm serve --fixtures conformance`: the whole server suite in one run.
//
// The tool needs Node >= 22, so it runs with the Node 22 binary that the `node` npm package
// puts in node_modules; these tests themselves run under the system Node 20 like the rest.
// The tool's exit status ignores WARNINGs, so the run is judged here from its
// checks.json files: any FAILURE or WARNING fails the test, and at least one SUCCESS is
// required (a run that checked nothing is not a pass).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServe, tempDir } from './lib/dorm_process.mjs';
import {
  TOOL_016, TOOL_MS, counts, describeCheck, listScenarios, readChecks, runTool, scenarioOf, tail,
} from './lib/conformance.mjs';

// `dorm serve --fixtures conformance` registers every tool, resource, template and prompt
// the suite's server scenarios use.
const SERVE_ARGS = ['--fixtures', 'conformance'];

// The server scenarios the tool knows, from its `list` command.
function serverScenarios() {
  const out = listScenarios(TOOL_016);
  const section = out.split(/Client scenarios/)[0];
  return [...section.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

test('conformance --suite all against `dorm serve --fixtures conformance`: every server scenario, no FAILURE or WARNING',
  { timeout: 10 * TOOL_MS }, async (t) => {
    const expected = serverScenarios();
    assert.ok(expected.length >= 32, `the tool lists only ${expected.length} server scenarios: ${expected.join(', ')}`);
    const { proc, url } = await startServe(t, { extraArgs: SERVE_ARGS });
    const outDir = tempDir(t);
    const run = await runTool(TOOL_016, url.href, ['--suite', 'all'], outDir);
    const { files, checks } = readChecks(outDir);
    const context = () => `\n--- conformance output (exit ${run.code ?? run.signal}) ---\n${tail(run.output)}` +
      `\n--- dorm stderr ---\n${tail(proc.stderr, 15)}`;
    t.diagnostic(`suite all: ${counts(checks)} in ${files.length} checks.json`);
    assert.ok(!run.timedOut, `conformance still running after ${10 * TOOL_MS} ms; killed${context()}`);
    assert.ok(proc.running(), `dorm exited during the suite${context()}`);

    // Every scenario ran and wrote its checks, each with at least one SUCCESS.
    const ran = new Set(files.map(scenarioOf));
    assert.deepEqual(expected.filter((s) => !ran.has(s)), [], `scenarios without checks.json${context()}`);
    for (const scenario of expected) {
      const own = files.filter((f) => scenarioOf(f) === scenario)
        .flatMap((f) => JSON.parse(readFileSync(f, 'utf8')));
      assert.ok(own.some((c) => c.status === 'SUCCESS'), `${scenario}: no SUCCESS among ${own.length} checks`);
    }
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    assert.equal(bad.length, 0, `${bad.length} check(s) failed or warned:\n${bad.map(describeCheck).join('\n')}${context()}`);

    // The checks that carry numbers, held to them: three live streams on one session, and
    // SSE polling's three steps.
    const functional = checks.find((c) => c.id === 'server-sse-streams-functional');
    assert.ok(functional, 'no server-sse-streams-functional check');
    assert.equal(functional.details?.numSseStreams, 3, describeCheck(functional));
    assert.equal(functional.details?.functionalSseStreams, 3, describeCheck(functional));
    for (const id of ['server-sse-priming-event', 'server-sse-retry-field', 'server-sse-disconnect-resume']) {
      assert.deepEqual(checks.filter((c) => c.id === id).map((c) => c.status), ['SUCCESS'], id);
    }
  });
