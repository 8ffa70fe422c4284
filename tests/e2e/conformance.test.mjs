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
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe, tempDir } from './lib/dorm_process.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const NODE22 = join(HERE, 'node_modules', 'node', 'bin', 'node');
const TOOL_DIR = join(HERE, 'node_modules', '@modelcontextprotocol', 'conformance');

// Bound for one tool run (a scenario takes about a second; dorm under ASan is slower).
const TOOL_MS = 60_000;

// `dorm serve --fixtures conformance` registers every tool, resource, template and prompt
// the suite's server scenarios use.
const SERVE_ARGS = ['--fixtures', 'conformance'];

function toolEntry() {
  const pkg = JSON.parse(readFileSync(join(TOOL_DIR, 'package.json'), 'utf8'));
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.conformance;
  return join(TOOL_DIR, bin);
}

// Runs the tool for one scenario; resolves with {code, signal, output, timedOut}. On
// timeout the tool is killed by its PID.
function runTool(url, selection, outDir) {
  for (const [what, path] of [['Node 22', NODE22], ['conformance tool', TOOL_DIR]]) {
    if (!existsSync(path)) throw new Error(`${what} missing at ${path}: run tools/bootstrap (npm ci in tests/e2e)`);
  }
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // set by `node --test` for its own children; not ours
  delete env.NODE_OPTIONS;
  const child = spawn(NODE22, [toolEntry(), 'server', '--url', url, ...selection, '-o', outDir], {
    cwd: HERE, env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c) => { output += c; });
  child.stderr.setEncoding('utf8').on('data', (c) => { output += c; });
  return new Promise((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ }
    }, TOOL_MS);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, output, timedOut }); });
  });
}

// Every check from every checks.json under dir (the tool writes
// server-<scenario>-<timestamp>/checks.json).
function readChecks(dir) {
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((p) => p === 'checks.json' || p.endsWith('/checks.json'))
    .map((p) => join(dir, p));
  return { files, checks: files.flatMap((f) => JSON.parse(readFileSync(f, 'utf8'))) };
}

const describeCheck = (c) => [
  `  ${c.status} ${c.id} (${c.name}): ${c.description}`,
  c.errorMessage ? `    errorMessage: ${c.errorMessage}` : null,
  c.details !== undefined ? `    details: ${JSON.stringify(c.details)}` : null,
].filter(Boolean).join('\n');

// The tool colours its output even into a pipe.
const tail = (text, lines = 30) => text.replace(/\x1b\[[0-9;]*m/g, '').split('\n').slice(-lines).join('\n');

const STATUSES = ['SUCCESS', 'FAILURE', 'WARNING', 'INFO'];
const counts = (checks) =>
  STATUSES.map((s) => `${checks.filter((c) => c.status === s).length} ${s}`).join(', ');

// The server scenarios the tool knows, from its `list` command.
function serverScenarios() {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const out = execFileSync(NODE22, [toolEntry(), 'list'], { cwd: HERE, env, encoding: 'utf8', timeout: TOOL_MS });
  const section = out.split(/Client scenarios/)[0];
  return [...section.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

// The scenario a checks.json belongs to: its directory is server-<scenario>-<timestamp>.
const scenarioOf = (file) => basename(dirname(file)).replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');

test('conformance --suite all against `dorm serve --fixtures conformance`: every server scenario, no FAILURE or WARNING',
  { timeout: 10 * TOOL_MS }, async (t) => {
    const expected = serverScenarios();
    assert.ok(expected.length >= 32, `the tool lists only ${expected.length} server scenarios: ${expected.join(', ')}`);
    const { proc, url } = await startServe(t, { extraArgs: SERVE_ARGS });
    const outDir = tempDir(t);
    const run = await runTool(url.href, ['--suite', 'all'], outDir);
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
