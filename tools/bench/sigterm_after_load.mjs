// SIGTERM after load: drives `dorm serve --fixtures testing` with L concurrent sessions (one
// official SDK client each) calling the `echo` tool back to back for D seconds, reports
// calls/s per 3-second window (flat over time, or growing cost per call?), then sends
// SIGTERM and times how long the server takes to exit. Issue 22 measured the state before
// the alarm fix: after ~31k calls at 64 connections the server was still busy 4 minutes
// after SIGTERM, draining one alarm-index rescan per re-arm.
//
// Not part of the test command. Run it with Node 20 from anywhere (the SDK is loaded from
// tests/e2e/node_modules), against a release build:
//
//   node tools/bench/sigterm_after_load.mjs [--bin build-bench/tools/dorm] [--sessions 64] [--seconds 15]
//
// Every wait is bounded; the server is killed by PID if it does not exit within 60 s.
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
    sessions: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '15' },
  },
});
process.env.DORM_BIN = resolve(args.bin ?? process.env.DORM_BIN ?? join(root, 'build-bench/tools/dorm'));
const sessions = Number(args.sessions);
const seconds = Number(args.seconds);

const requireFromE2e = createRequire(join(e2e, 'package.json'));
const load = (specifier) => import(pathToFileURL(requireFromE2e.resolve(specifier)).href);
const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { startServe } = await import(pathToFileURL(join(e2e, 'lib/dorm_process.mjs')).href);

const cleanups = [];
const t = { after: (fn) => cleanups.push(fn) };
const server = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--log-level', 'warn'] });

const clients = [];
for (let i = 0; i < sessions; ++i) {
  const client = new Client({ name: 'dorm-sigterm-after-load', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(server.url));
  clients.push(client);
}

const windowMs = 3000;
const windows = [];
const start = performance.now();
const deadline = start + seconds * 1000;
let failures = 0;
async function drive(client, n) {
  let i = 0;
  while (performance.now() < deadline) {
    try {
      await client.callTool({ name: 'echo', arguments: { text: `s${n}-${i++}` } });
      const w = Math.floor((performance.now() - start) / windowMs);
      windows[w] = (windows[w] ?? 0) + 1;
    } catch {
      ++failures;
    }
  }
}
await Promise.all(clients.map((c, n) => drive(c, n)));
const total = windows.reduce((a, b) => a + (b ?? 0), 0);
console.log(`dorm: ${process.env.DORM_BIN}; ${sessions} sessions, ${seconds} s, ${total} calls, ${failures} failed`);
console.log('calls/s per 3 s window: ' + windows.map((c) => ((c ?? 0) / (windowMs / 1000)).toFixed(0)).join(', '));

const termAt = performance.now();
process.kill(server.proc.pid, 'SIGTERM');
let exitMs;
try {
  await server.proc.waitForExit(60_000);
  exitMs = performance.now() - termAt;
} catch {
  process.kill(server.proc.pid, 'SIGKILL');
}
console.log(exitMs === undefined ? 'SIGTERM: still running after 60 s (killed)' : `SIGTERM to exit: ${exitMs.toFixed(0)} ms`);
for (const c of clients) c.close().catch(() => {});
for (const fn of cleanups.reverse()) { try { await fn(); } catch { /* best effort */ } }
process.exit(0);
