// Starts `dorm` as a child process for a test and stops it by PID, with every wait bounded.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

export const DORM_BIN = process.env.DORM_BIN;
if (!DORM_BIN) throw new Error('DORM_BIN must name the dorm binary under test');

// Bound for any single wait on the child (start-up under ASan included).
export const WAIT_MS = 20_000;

export function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'dorm-e2e-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A running dorm child (or another program of the build, `bin`). Collects stdout lines
// and stderr text; killed by PID at test end. `env` adds variables to the test's own
// environment for the child.
export class DormProcess {
  constructor(t, args, { env, bin = DORM_BIN } = {}) {
    this.child = spawn(bin, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: env ? { ...process.env, ...env } : process.env,
    });
    this.pid = this.child.pid;
    this.stdoutLines = [];
    this.stderr = '';
    this.lineWaiters = [];
    let partial = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk) => {
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop();
      for (const line of lines) {
        this.stdoutLines.push(line);
        for (const w of this.lineWaiters) w();
      }
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk) => {
      this.stderr += chunk;
      for (const w of this.lineWaiters) w();
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitCode = code;
        this.exitSignal = signal;
        for (const w of this.lineWaiters) w();
        resolve({ code, signal });
      });
    });
    t.after(() => this.kill('SIGKILL'));
  }

  running() { return this.exitCode === undefined && this.exitSignal === undefined; }

  kill(signal) {
    if (this.running()) {
      try { process.kill(this.pid, signal); } catch { /* already gone */ }
    }
  }

  // Resolves with the first stdout line matching `re`; rejects on exit or after `ms`.
  waitForLine(re, ms = WAIT_MS) {
    return this.waitFor(() => this.stdoutLines.find((l) => re.test(l)), `a line matching ${re}`, ms);
  }

  // Resolves with the first match of `re` in stderr; rejects on exit or after `ms`.
  waitForStderr(re, ms = WAIT_MS) {
    return this.waitFor(() => this.stderr.match(re) ?? undefined, `stderr matching ${re}`, ms);
  }

  // Resolves with probe()'s first defined value, re-probing whenever output arrives;
  // rejects when the child exits first or after `ms`.
  waitFor(probe, what, ms) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = probe();
        if (found !== undefined) { done(); resolve(found); return; }
        if (!this.running()) {
          done();
          reject(new Error(`dorm exited (${this.exitCode ?? this.exitSignal}) before ${what}; stderr:\n${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${ms} ms; stderr:\n${this.stderr}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.lineWaiters = this.lineWaiters.filter((w) => w !== check);
      };
      this.lineWaiters.push(check);
      check();
    });
  }

  // Resolves with {code, signal} once the child exits; rejects after `ms`.
  waitForExit(ms = WAIT_MS) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`dorm (pid ${this.pid}) still running after ${ms} ms`)), ms);
    });
    return Promise.race([this.exited, timeout]).finally(() => clearTimeout(timer));
  }
}

// Starts `dorm serve` on a free port and waits for its ready line.
export async function startServe(t, { dataDir, listen = '127.0.0.1:0', extraArgs = [] } = {}) {
  const dir = dataDir ?? tempDir(t);
  const proc = new DormProcess(t, ['serve', '--listen', listen, '--storage', `rocksdb:${join(dir, 'data')}`, ...extraArgs]);
  const line = await proc.waitForLine(/^listening on http:\/\//);
  const url = new URL(line.slice('listening on '.length));
  return { proc, url, port: Number(url.port), dataDir: dir };
}

// Opens a TCP connection and resolves once it is established.
export function connect(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

// Starts a long call with the official SDK client whose process a test is about to kill:
// `primed` resolves with the resumption token once the server's priming event arrived (the
// call is journaled from then on), `outcome` settles as {ok: true} or {ok: false, error}.
export function startPrimedCall(client, name, args) {
  let seen;
  const primed = new Promise((resolve) => { seen = resolve; });
  const call = client.callTool({ name, arguments: args }, undefined, {
    timeout: WAIT_MS,
    onresumptiontoken: (token) => seen(token),
  });
  const outcome = call.then(() => ({ ok: true }), (error) => ({ ok: false, error }));
  return { primed, outcome };
}
