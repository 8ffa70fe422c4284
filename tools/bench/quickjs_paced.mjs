// Trivial executions (`return 1`) in the QuickJS shape of the system dorm is modelled on,
// with and without a pause between them: `dorm bench engine`'s paced baseline. The peer's
// own bench.mjs (../shared/peers/quickjs-engine) runs its executions back to back only;
// this driver does per execution what the peer does — a new QuickJS runtime with a 64 MiB
// memory limit, a 1 MiB stack and an interrupt handler polling a deadline, a new context,
// a host function behind a `tools` proxy, the code as an async function whose promise the
// host awaits, everything disposed — and prints its back-to-back figure too, so a run shows
// whether it matches the peer's (`dorm bench engine` prints both).
//   node tools/bench/quickjs_paced.mjs --quickjs-dir DIR [--runs 500] [--paced-runs N] [--gap-ms 2]
// --runs counts the back-to-back executions (as the peer's --runs), --paced-runs the paced
// ones (default: --runs).
// DIR is a copy of the peer with `npm install` done; quickjs-emscripten is loaded from it.
// Prints one JSON line per case: {"case", "runs", "gap_ms", "p50_ms", "p99_ms"}.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const { values: args } = parseArgs({
  options: {
    'quickjs-dir': { type: 'string' },
    runs: { type: 'string', default: '500' },
    'paced-runs': { type: 'string' },
    'gap-ms': { type: 'string', default: '2' },
  },
});
if (!args['quickjs-dir']) {
  console.error('quickjs_paced.mjs: --quickjs-dir is required');
  process.exit(2);
}
const runs = Number(args.runs);
const pacedRuns = Number(args['paced-runs'] ?? args.runs);
const gapMs = Number(args['gap-ms']);
if (!(runs > 0) || !(pacedRuns > 0) || !(gapMs >= 0)) {
  console.error('quickjs_paced.mjs: --runs and --paced-runs must be positive, --gap-ms at least 0');
  process.exit(2);
}
const resolveIn = createRequire(join(args['quickjs-dir'], 'package.json'));
const { getQuickJS } = await import(pathToFileURL(resolveIn.resolve('quickjs-emscripten')).href);
const quickjs = await getQuickJS();

const kMemoryLimit = 64 * 1024 * 1024;
const kStackLimit = 1024 * 1024;
const kWallMs = 300_000;

async function executeOnce(code) {
  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(kMemoryLimit);
  runtime.setMaxStackSize(kStackLimit);
  const deadline = Date.now() + kWallMs;
  runtime.setInterruptHandler(() => Date.now() > deadline);
  const context = runtime.newContext();
  try {
    // The bridge: a tool call answers at once with its path, arguments and a count.
    let count = 0;
    const bridge = context.newFunction('__call', (pathHandle, argsHandle) => {
      const reply = JSON.stringify({
        path: context.getString(pathHandle), args: JSON.parse(context.getString(argsHandle)), n: ++count,
      });
      const promise = context.newPromise();
      queueMicrotask(() => {
        const value = context.newString(reply);
        promise.resolve(value);
        value.dispose();
        runtime.executePendingJobs();
      });
      return promise.handle;
    });
    context.setProp(context.global, '__call', bridge);
    bridge.dispose();
    const source = `const call = globalThis.__call; delete globalThis.__call;
const tools = new Proxy({}, { get: (_, name) => (a) => call(String(name), JSON.stringify(a ?? {})).then(JSON.parse) });
globalThis.__outcome = (async () => { ${code} })();`;
    const evaluated = context.evalCode(source);
    if (evaluated.error) {
      const error = context.dump(evaluated.error);
      evaluated.error.dispose();
      throw new Error(JSON.stringify(error));
    }
    evaluated.value.dispose();
    const outcomeHandle = context.getProp(context.global, '__outcome');
    const settled = context.resolvePromise(outcomeHandle);
    outcomeHandle.dispose();
    runtime.executePendingJobs();
    const outcome = await settled;
    const handle = outcome.error ?? outcome.value;
    const value = context.dump(handle);
    handle.dispose();
    return value;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}

function percentile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function measure(name, runs, gap) {
  for (let i = 0; i < 20; i++) await executeOnce('return 1');  // warm up
  const latencies = [];
  for (let i = 0; i < runs; i++) {
    if (gap > 0) await sleep(gap);
    const started = performance.now();
    const value = await executeOnce('return 1');
    latencies.push(performance.now() - started);
    if (value !== 1) throw new Error(`return 1 gave ${JSON.stringify(value)}`);
  }
  latencies.sort((a, b) => a - b);
  console.log(JSON.stringify({
    case: name, runs, gap_ms: gap,
    p50_ms: +percentile(latencies, 0.5).toFixed(3), p99_ms: +percentile(latencies, 0.99).toFixed(3),
  }));
}

await measure('trivial back to back', runs, 0);
if (gapMs > 0) await measure('trivial paced', pacedRuns, gapMs);
