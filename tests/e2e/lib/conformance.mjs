// Running the official MCP conformance tool (an npm package of the test tooling) against
// a dorm server, and reading what it wrote. The tool needs Node >= 22, so it runs with the
// Node 22 binary that the `node` npm package puts in node_modules; the tests themselves run
// under the system Node 20. Shared by conformance.test.mjs (the 2025 suite, 0.1.16) and
// modern.test.mjs (the 2026-07-28 revision, 0.2.0-alpha.12, installed as
// `conformance-modern`).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = join(dirname(fileURLToPath(import.meta.url)), '..');
export const NODE22 = join(HERE, 'node_modules', 'node', 'bin', 'node');
export const TOOL_016 = join(HERE, 'node_modules', '@modelcontextprotocol', 'conformance');
export const TOOL_MODERN = join(HERE, 'node_modules', 'conformance-modern');

// Bound for one tool run (a scenario takes about a second; dorm under ASan is slower).
export const TOOL_MS = 60_000;

function toolEntry(toolDir) {
  const pkg = JSON.parse(readFileSync(join(toolDir, 'package.json'), 'utf8'));
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.conformance;
  return join(toolDir, bin);
}

function toolEnv() {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // set by `node --test` for its own children; not ours
  delete env.NODE_OPTIONS;
  return env;
}

// Runs the tool's `server` command; resolves with {code, signal, output, timedOut}. On
// timeout the tool is killed by its PID.
export function runTool(toolDir, url, selection, outDir, ms = TOOL_MS) {
  for (const [what, path] of [['Node 22', NODE22], ['conformance tool', toolDir]]) {
    if (!existsSync(path)) throw new Error(`${what} missing at ${path}: run tools/bootstrap (npm ci in tests/e2e)`);
  }
  const child = spawn(NODE22, [toolEntry(toolDir), 'server', '--url', url, ...selection, '-o', outDir], {
    cwd: HERE, env: toolEnv(), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c) => { output += c; });
  child.stderr.setEncoding('utf8').on('data', (c) => { output += c; });
  return new Promise((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ }
    }, ms);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, output, timedOut }); });
  });
}

// The output of the tool's `list` command with `args`.
export function listScenarios(toolDir, args = []) {
  return execFileSync(NODE22, [toolEntry(toolDir), 'list', ...args], { cwd: HERE, env: toolEnv(), encoding: 'utf8', timeout: TOOL_MS });
}

// Every check from every checks.json under dir (the tool writes
// server-<scenario>-<timestamp>/checks.json).
export function readChecks(dir) {
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((p) => p === 'checks.json' || p.endsWith('/checks.json'))
    .map((p) => join(dir, p));
  return { files, checks: files.flatMap((f) => JSON.parse(readFileSync(f, 'utf8'))) };
}

export const describeCheck = (c) => [
  `  ${c.status} ${c.id} (${c.name}): ${c.description}`,
  c.errorMessage ? `    errorMessage: ${c.errorMessage}` : null,
  c.details !== undefined ? `    details: ${JSON.stringify(c.details)}` : null,
].filter(Boolean).join('\n');

// The tool colours its output even into a pipe.
export const tail = (text, lines = 30) => text.replace(/\x1b\[[0-9;]*m/g, '').split('\n').slice(-lines).join('\n');

const STATUSES = ['SUCCESS', 'FAILURE', 'WARNING', 'INFO'];
export const counts = (checks) =>
  STATUSES.map((s) => `${checks.filter((c) => c.status === s).length} ${s}`).join(', ');

// The scenario a checks.json belongs to: its directory is server-<scenario>-<timestamp>.
export const scenarioOf = (file) => basename(dirname(file)).replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
