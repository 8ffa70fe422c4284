// Kill to error: how long after a SIGKILL of `dorm serve` mid-call the official SDK client,
// with its default options, gets the reaper's -32001 server_restart error, when the server
// is restarted at once on the same port and data directory
// (docs/architecture.md#the-restart-incident: the floor is
// the client's reconnect delay R, 500 ms by default; target median <= R + 250 ms). Then the
// same incident with `--no-reaper` and a 15 s client request timeout, counting the calls
// that hang (end by the client's own timeout instead of a server_restart error).
//
// Not part of the test command. Run it with Node 20 from anywhere; the SDK is loaded from
// tests/e2e/node_modules:
//
//   node tools/bench/kill_to_error.mjs [--bin build-bench/tools/dorm] [--runs 20]
//        [--hang-runs 20] [--hang-timeout-ms 15000]
//
// (or DORM_BIN=... instead of --bin). Every wait is bounded; children are killed by PID.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const e2e = join(root, 'tests/e2e');

const { values: args } = parseArgs({
  options: {
    bin: { type: 'string' },
    runs: { type: 'string', default: '20' },
    'hang-runs': { type: 'string', default: '20' },
    'hang-timeout-ms': { type: 'string', default: '15000' },
  },
});
process.env.DORM_BIN = resolve(args.bin ?? process.env.DORM_BIN ?? join(root, 'build-bench/tools/dorm'));
const runs = Number(args.runs);
const hangRuns = Number(args['hang-runs']);
const hangTimeoutMs = Number(args['hang-timeout-ms']);

// ESM resolves bare specifiers from the importing file, not the working directory, so the
// SDK and the e2e helpers are loaded by path from tests/e2e.
const requireFromE2e = createRequire(join(e2e, 'package.json'));
const load = (specifier) => import(pathToFileURL(requireFromE2e.resolve(specifier)).href);
const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { startServe, WAIT_MS } = await import(pathToFileURL(join(e2e, 'lib/dorm_process.mjs')).href);

// What the e2e helpers expect of node:test's `t`: cleanups, run here at the end of each run.
function scope() {
  const cleanups = [];
  return {
    after: (fn) => cleanups.push(fn),
    async close() {
      for (const fn of cleanups.reverse()) {
        try { await fn(); } catch { /* best effort */ }
      }
    },
  };
}

function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// One incident. Returns { ms (kill to the call's end), readyMs (kill to the restarted
// server's ready line), outcome: 'server_restart' | 'client_timeout' | 'other', detail }.
async function incident({ extraArgs, requestTimeoutMs }) {
  const t = scope();
  try {
    const serveArgs = ['--fixtures', 'testing', ...extraArgs];
    const first = await startServe(t, { extraArgs: serveArgs });
    const client = new Client({ name: 'dorm-kill-to-error', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(first.url));  // default options
    t.after(() => client.close());

    let primed;
    const primedSeen = new Promise((r) => { primed = r; });
    const options = { onresumptiontoken: (token) => primed(token) };
    if (requestTimeoutMs) options.timeout = requestTimeoutMs;  // else the SDK default (60 s)
    const call = client.callTool({ name: 'sleep', arguments: { ms: 30000 } }, undefined, options);
    const ended = call.then(
      (result) => ({ at: performance.now(), result }),
      (error) => ({ at: performance.now(), error }));
    await bounded(primedSeen, WAIT_MS, 'priming event');

    const killedAt = performance.now();
    process.kill(first.proc.pid, 'SIGKILL');
    await first.proc.waitForExit();
    await startServe(t, { dataDir: first.dataDir, listen: `127.0.0.1:${first.port}`, extraArgs: serveArgs });
    const readyMs = performance.now() - killedAt;

    const end = await bounded(ended, (requestTimeoutMs ?? 60_000) + WAIT_MS, 'end of the killed call');
    const ms = end.at - killedAt;
    if (end.result) return { ms, readyMs, outcome: 'other', detail: 'the killed call returned a result' };
    const { error } = end;
    if (error.code === -32001 && error.data?.reason === 'server_restart' && error.data?.retrySafe === false) {
      return { ms, readyMs, outcome: 'server_restart' };
    }
    if (error.code === -32001 && error.data?.reason === undefined) {
      return { ms, readyMs, outcome: 'client_timeout', detail: error.message };
    }
    return { ms, readyMs, outcome: 'other', detail: `${error.code} ${error.message}` };
  } finally {
    await t.close();
  }
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const fmt = (x) => x.toFixed(0);

async function series(label, count, options) {
  console.log(`== ${label}: ${count} runs`);
  const results = [];
  for (let i = 0; i < count; ++i) {
    const r = await incident(options);
    results.push(r);
    console.log(`run ${i + 1}: ${r.outcome} after ${fmt(r.ms)} ms (restarted server ready ${fmt(r.readyMs)} ms after the kill)` +
                (r.detail ? ` — ${r.detail}` : ''));
  }
  return results;
}

console.log(`dorm: ${process.env.DORM_BIN}; node ${process.version}`);
const reaped = await series('kill to error, reaper on, SDK defaults', runs, { extraArgs: [] });
const hung = await series(`--no-reaper, client request timeout ${hangTimeoutMs} ms`, hangRuns,
                          { extraArgs: ['--no-reaper'], requestTimeoutMs: hangTimeoutMs });

const ok = reaped.filter((r) => r.outcome === 'server_restart').map((r) => r.ms);
const ready = reaped.map((r) => r.readyMs);
console.log('\n== summary');
console.log(`reaper on: ${ok.length}/${reaped.length} calls failed with -32001 server_restart; ` +
            `kill to error median ${fmt(median(ok))} ms, min ${fmt(Math.min(...ok))}, max ${fmt(Math.max(...ok))}; ` +
            `kill to restarted ready median ${fmt(median(ready))} ms, max ${fmt(Math.max(...ready))}`);
const hangs = hung.filter((r) => r.outcome === 'client_timeout');
console.log(`--no-reaper: ${hangs.length}/${hung.length} calls hung until the client's ${hangTimeoutMs} ms timeout ` +
            `(kill to end median ${fmt(median(hung.map((r) => r.ms)))} ms); ` +
            `${hung.filter((r) => r.outcome === 'server_restart').length} got server_restart, ` +
            `${hung.filter((r) => r.outcome === 'other').length} other`);
process.exit(ok.length === reaped.length ? 0 : 1);
