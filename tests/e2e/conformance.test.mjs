// The official MCP conformance tool (@modelcontextprotocol/conformance, pinned in
// package.json) against `dorm serve`, one short tool run per scenario.
//
// The tool needs Node >= 22, so it runs with the Node 22 binary that the `node` npm package
// puts in node_modules; these tests themselves run under the system Node 20 like the rest.
// The tool's exit status ignores WARNINGs, so each scenario is judged here from its
// checks.json files: any FAILURE or WARNING fails the test, and at least one SUCCESS is
// required (a run that checked nothing is not a pass).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe, tempDir } from './lib/dorm_process.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const NODE22 = join(HERE, 'node_modules', 'node', 'bin', 'node');
const TOOL_DIR = join(HERE, 'node_modules', '@modelcontextprotocol', 'conformance');

// Bound for one tool run (a scenario takes about a second; dorm under ASan is slower).
const TOOL_MS = 60_000;

// Extra `dorm serve` arguments for every scenario: becomes ['--fixtures', 'testing'] once
// serve has that flag.
const SERVE_ARGS = ['--fixtures', 'testing'];
// The tools `--fixtures testing` registers; tools-list must list each of them.
const FIXTURE_TOOLS = ['echo', 'sleep', 'kv_put', 'kv_get', 'spin', 'flood', 'announce', 'ask', 'add'];

function toolEntry() {
  const pkg = JSON.parse(readFileSync(join(TOOL_DIR, 'package.json'), 'utf8'));
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.conformance;
  return join(TOOL_DIR, bin);
}

// Runs the tool for one scenario; resolves with {code, signal, output, timedOut}. On
// timeout the tool is killed by its PID.
function runTool(url, scenario, outDir) {
  for (const [what, path] of [['Node 22', NODE22], ['conformance tool', TOOL_DIR]]) {
    if (!existsSync(path)) throw new Error(`${what} missing at ${path}: run tools/bootstrap (npm ci in tests/e2e)`);
  }
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // set by `node --test` for its own children; not ours
  delete env.NODE_OPTIONS;
  const child = spawn(NODE22, [toolEntry(), 'server', '--url', url, '--scenario', scenario, '-o', outDir], {
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

// Starts `dorm serve` with extraArgs, runs one scenario against it and judges the checks.
// With `tools`, the tools/list result reported by the tool must include each name.
// Returns the checks for further assertions.
async function conformance(t, scenario, { extraArgs = SERVE_ARGS, tools = [] } = {}) {
  const { proc, url } = await startServe(t, { extraArgs });
  const outDir = tempDir(t);
  const run = await runTool(url.href, scenario, outDir);
  const { files, checks } = readChecks(outDir);
  const context = () => `\n--- conformance output (exit ${run.code ?? run.signal}) ---\n${tail(run.output)}` +
    `\n--- dorm stderr ---\n${tail(proc.stderr, 15)}`;
  t.diagnostic(`${scenario}: ${counts(checks)} in ${files.length} checks.json`);

  assert.ok(!run.timedOut, `conformance ${scenario} still running after ${TOOL_MS} ms; killed${context()}`);
  assert.ok(files.length > 0, `conformance ${scenario} wrote no checks.json under ${outDir}${context()}`);
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  assert.equal(bad.length, 0, `${scenario}: ${bad.length} check(s) failed or warned:\n` +
    `${bad.map(describeCheck).join('\n')}${context()}`);
  assert.ok(checks.some((c) => c.status === 'SUCCESS'),
    `${scenario}: no SUCCESS check among ${checks.length}${context()}`);
  assert.ok(proc.running(), `dorm exited during ${scenario}${context()}`);

  if (tools.length) {
    // The tools-list check reports the listed names in details.tools.
    const listed = new Set(checks
      .filter((c) => (c.status === 'SUCCESS' || c.status === 'INFO') && Array.isArray(c.details?.tools))
      .flatMap((c) => c.details.tools));
    const missing = tools.filter((name) => !listed.has(name));
    assert.deepEqual(missing, [], `${scenario}: tools/list lacks ${missing.join(', ')}; ` +
      `listed: [${[...listed].join(', ')}]`);
  }
  return checks;
}

const opts = { timeout: 2 * TOOL_MS };

test('conformance server-initialize', opts, (t) => conformance(t, 'server-initialize'));
test('conformance ping', opts, (t) => conformance(t, 'ping'));
test('conformance tools-list, with every fixture tool', opts,
  (t) => conformance(t, 'tools-list', { tools: FIXTURE_TOOLS }));
test('conformance logging-set-level', opts, (t) => conformance(t, 'logging-set-level'));
test('conformance dns-rebinding-protection', opts, (t) => conformance(t, 'dns-rebinding-protection'));

// Live streams: three concurrent POST streams on one session, and SSE polling (the
// server closes the connection after the priming event; the client resumes by GET).
const STREAM_ARGS = ['--fixtures', 'testing,conformance'];
const statusOf = (checks, id) => checks.filter((c) => c.id === id).map((c) => c.status);

test('conformance server-sse-multiple-streams: three streams, each SUCCESS', opts, async (t) => {
  const checks = await conformance(t, 'server-sse-multiple-streams', { extraArgs: STREAM_ARGS });
  const functional = checks.find((c) => c.id === 'server-sse-streams-functional');
  assert.ok(functional, `no server-sse-streams-functional check: ${checks.map((c) => c.id).join(', ')}`);
  assert.equal(functional.status, 'SUCCESS', describeCheck(functional));
  assert.equal(functional.details?.numSseStreams, 3, describeCheck(functional));
  assert.equal(functional.details?.functionalSseStreams, 3, describeCheck(functional));
});

test('conformance server-sse-polling: priming, retry and disconnect-resume each SUCCESS', opts, async (t) => {
  const checks = await conformance(t, 'server-sse-polling', { extraArgs: STREAM_ARGS });
  for (const id of ['server-sse-priming-event', 'server-sse-retry-field', 'server-sse-disconnect-resume']) {
    assert.deepEqual(statusOf(checks, id), ['SUCCESS'], `${id}: ${checks.filter((c) => c.id === id).map(describeCheck).join('\n')}`);
  }
});
