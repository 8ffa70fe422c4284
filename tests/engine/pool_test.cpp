// engine::Pool against real dorm-engine-worker processes: the globals user code sees, every
// limit, determinism and replay. Escape attempts and worker deaths are in sandbox_test.cpp.
#include "dorm/engine/pool.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine_harness.hpp"

using namespace dorm::engine;
using dorm::engine::testing::ManualClock;
using dorm::engine::testing::Recorder;

namespace {

constexpr std::int64_t kT0 = 1'750'000'000'000;

ManualClock& test_clock() {
  static ManualClock clock(kT0);
  return clock;
}

PoolOptions test_pool_options(unsigned workers, unsigned slots) {
  PoolOptions options;
  options.worker_path = DORM_ENGINE_WORKER;
  options.workers = workers;
  options.slots_per_worker = slots;
  options.keep_worker_stderr = true;
  options.clock = &test_clock();
  return options;
}

// One pool for the suite: 2 workers with 2 slots each, on the test clock.
Pool& pool() {
  static std::unique_ptr<Pool> shared = [] {
    auto created = Pool::create(test_pool_options(2, 2));
    REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
    return std::move(*created);
  }();
  return *shared;
}

Limits small_limits() {
  Limits l;
  l.heap_bytes = 32ull << 20;
  l.cpu_ms = 2'000;
  l.wall_ms = 10'000;
  return l;
}

struct Run {
  std::shared_ptr<Recorder> rec;
  std::shared_ptr<Execution> exec;
};

Run start(const std::string& source, Limits limits = small_limits(), std::optional<Journal> journal = {},
          Recorder::Answer answer = nullptr) {
  Run run;
  run.rec = std::make_shared<Recorder>(std::move(answer));
  auto started = pool().start(ExecutionRequest{"test", source, limits, std::move(journal)}, run.rec);
  REQUIRE_MESSAGE(started.ok(), (started.ok() ? "" : started.error().describe()));
  run.exec = *started;
  run.rec->attach(run.exec);
  return run;
}

// Runs to the end; answers each call with `answer` (echoing the call when none is given).
Run finish(const std::string& source, Limits limits = small_limits(), Recorder::Answer answer = nullptr) {
  if (!answer) {
    answer = [](const ToolCallEntry& c) {
      return std::make_optional(std::make_pair(true, R"({"path":")" + c.path + R"(","args":)" + c.args_json + "}"));
    };
  }
  Run run = start(source, limits, {}, std::move(answer));
  REQUIRE(run.rec->wait_done());
  return run;
}

std::string result_of(const std::string& source, Limits limits = small_limits()) {
  Run run = finish(source, limits);
  INFO((run.rec->failure ? run.rec->failure->second : ""));
  REQUIRE(run.rec->result.has_value());
  return *run.rec->result;
}

FailureKind failure_of(const std::string& source, Limits limits, std::string* message = nullptr) {
  Run run = finish(source, limits);
  INFO((run.rec->result ? *run.rec->result : ""));
  REQUIRE(run.rec->failure.has_value());
  MESSAGE(run.rec->failure->second);
  if (message) *message = run.rec->failure->second;
  return run.rec->failure->first;
}

// Pool::create refuses `options` as invalid, naming `option`.
void check_refused(const PoolOptions& options, const char* option) {
  auto refused = Pool::create(options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == dorm::ErrorCode::invalid_argument);
  CHECK(refused.error().message.find(option) != std::string::npos);
}

}  // namespace

TEST_CASE("engine: a body's return value is the result, as JSON") {
  CHECK(result_of("return 1") == "1");
  CHECK(result_of("return {a: [1, 'two', null]}") == R"({"a":[1,"two",null]})");
  CHECK(result_of("const x = 2;") == "null");
  CHECK(result_of("return await Promise.resolve('later')") == R"("later")");
}

TEST_CASE("engine: an asm.js module runs, as plain JavaScript") {
  // The worker turns asm.js validation off (it would compile the module to WebAssembly).
  CHECK(result_of("function M(stdlib) { 'use asm'; function add(a, b) { a = a | 0; b = b | 0; "
                  "return (a + b) | 0; } return { add: add }; } return M(globalThis).add(40, 2)") == "42");
}

TEST_CASE("engine: tools is a lazy proxy of dotted paths, answered with parsed JSON") {
  Run run = finish("const r = await tools.github.issues.list({repo: 'dorm', n: 2}); return r.args.n + 1");
  REQUIRE(run.rec->result);
  CHECK(*run.rec->result == "3");
  REQUIRE(run.rec->calls.size() == 1);
  CHECK(run.rec->calls[0].seq == 1);
  CHECK(run.rec->calls[0].path == "github.issues.list");
  CHECK(run.rec->calls[0].args_json == R"({"repo":"dorm","n":2})");
  // No arguments means {}.
  Run bare = finish("return (await tools.ping()).args");
  CHECK(bare.rec->calls.at(0).args_json == "{}");
  CHECK(*bare.rec->result == "{}");
}

TEST_CASE("engine: tools is not thenable and cannot be enumerated") {
  CHECK(result_of("const t = await tools; return [t === tools, typeof tools.then, typeof tools[Symbol.iterator]]") ==
        R"([true,"undefined","undefined"])");
  for (const char* walk : {"Object.keys(tools)", "Reflect.ownKeys(tools)", "for (const k in tools) {}",
                           "'x' in tools", "Object.getOwnPropertyDescriptor(tools, 'x')"}) {
    CAPTURE(walk);
    std::string r = result_of(std::string("try { ") + walk + "; return 'walked' } catch (e) { return e.message }");
    CHECK(r.find("tools.search") != std::string::npos);
  }
  CHECK(result_of("try { tools.x = 1 } catch (e) { return e.message }").find("read-only") != std::string::npos);
}

TEST_CASE("engine: a failed tool call rejects with the host's message") {
  Run run = finish("try { await tools.deny() } catch (e) { return [e instanceof Error, e.message] }", small_limits(),
                   [](const ToolCallEntry&) { return std::make_optional(std::make_pair(false, std::string("no access"))); });
  CHECK(*run.rec->result == R"([true,"no access"])");
}

TEST_CASE("engine: console is captured as [level] text, cycles safe") {
  Run run = finish(
      "console.log('a', {b: 1}, [2]); console.info(3n); console.warn(undefined, null);"
      "const c = {}; c.self = c; console.error(c); console.debug(() => 1, Symbol('s')); return 0");
  REQUIRE(run.rec->result);
  REQUIRE(run.rec->logs.size() == 5);
  CHECK(run.rec->logs[0] == R"([log] a {"b":1} [2])");
  CHECK(run.rec->logs[1] == "[info] 3n");
  CHECK(run.rec->logs[2] == "[warn] undefined null");
  CHECK(run.rec->logs[3] == R"([error] {"self":"[Circular]"})");
  CHECK(run.rec->logs[4] == "[debug] [Function] Symbol(s)");
}

TEST_CASE("engine: emit sends JSON values and refuses what is not JSON") {
  Run run = finish("emit({x: 1}); emit('two'); try { emit(() => 1) } catch (e) { return e.message }");
  REQUIRE(run.rec->emits.size() == 2);
  CHECK(run.rec->emits[0] == R"({"x":1})");
  CHECK(run.rec->emits[1] == R"("two")");
  CHECK(run.rec->result->find("JSON value") != std::string::npos);
}

TEST_CASE("engine: the network globals throw with guidance") {
  for (const char* name : {"fetch", "XMLHttpRequest", "WebSocket"}) {
    CAPTURE(name);
    std::string r = result_of(std::string("try { ") + name + "('https://example.com'); return 'ran' } catch (e) { return e.message }");
    CHECK(r == std::string("\"") + name + " is disabled in dorm's engine; call a tool instead\"");
  }
}

TEST_CASE("engine: Date.now is the journaled host time, advanced by each tool result") {
  Run run = start("const a = Date.now(); await tools.wait(); const b = new Date().getTime(); return [a, b]");
  REQUIRE(run.rec->wait_calls(1));
  test_clock().advance(5'000);
  run.exec->deliver_tool_result(1, true, "{}");
  REQUIRE(run.rec->wait_done());
  REQUIRE(run.rec->result);
  auto journal = run.exec->journal();
  auto result_time = std::get<ToolResultEntry>(journal.entries.at(1)).time_ms;
  CHECK(*run.rec->result == "[" + std::to_string(journal.start_ms) + "," + std::to_string(result_time) + "]");
  CHECK(result_time - journal.start_ms >= 5'000);
}

TEST_CASE("engine: setTimeout fires on the host clock, in due order; clearTimeout cancels") {
  Run run = start(
      "const order = []; setTimeout(() => order.push('late'), 2000);"
      "const t = setTimeout(() => order.push('cleared'), 500); clearTimeout(t);"
      "await new Promise(r => setTimeout(() => { order.push('early'); r() }, 1000));"
      "await new Promise(r => setTimeout(r, 1500)); return order");
  auto timers_set = [](std::size_t n) {
    return [n](const std::vector<JournalEntry>& j) {
      std::size_t sets = 0;
      for (auto& e : j) sets += std::holds_alternative<TimerSetEntry>(e) ? 1 : 0;
      return sets >= n;
    };
  };
  REQUIRE(run.rec->wait_journal(timers_set(3)));
  test_clock().advance(1'000);
  pool().poke();
  REQUIRE(run.rec->wait_journal(timers_set(4)));
  test_clock().advance(1'500);
  pool().poke();
  REQUIRE(run.rec->wait_done());
  REQUIRE(run.rec->result);
  CHECK(*run.rec->result == R"(["early","late"])");
}

TEST_CASE("engine: Math.random is seeded from the journal") {
  Journal j;
  j.start_ms = 42;
  j.seed = 7;
  auto a = start("return [Math.random(), Math.random(), Date.now()]", small_limits(), j);
  auto b = start("return [Math.random(), Math.random(), Date.now()]", small_limits(), j);
  REQUIRE(a.rec->wait_done());
  REQUIRE(b.rec->wait_done());
  REQUIRE(a.rec->result);
  CHECK(*a.rec->result == *b.rec->result);
  CHECK(a.rec->result->ends_with(",42]"));
  j.seed = 8;
  auto c = start("return [Math.random(), Math.random(), Date.now()]", small_limits(), j);
  REQUIRE(c.rec->wait_done());
  CHECK(*c.rec->result != *a.rec->result);
}

TEST_CASE("engine: uncaught errors fail with runtime_error and the user's line") {
  std::string message;
  CHECK(failure_of("const a = 1;\nthrow new TypeError('bad input')", small_limits(), &message) ==
        FailureKind::runtime_error);
  CHECK(message.find("TypeError: bad input") != std::string::npos);
  CHECK(message.find("line 2") != std::string::npos);
  CHECK(failure_of("return 10n", small_limits(), &message) == FailureKind::runtime_error);
  CHECK(message.find("not JSON-serialisable") != std::string::npos);
}

TEST_CASE("engine: the pool counts completions, and failures by kind") {
  auto kind = [](FailureKind k) { return static_cast<std::size_t>(k); };
  auto before = pool().stats();
  CHECK(failure_of("throw new Error('counted')", small_limits()) == FailureKind::runtime_error);
  CHECK(failure_of("const = ;", small_limits()) == FailureKind::syntax_error);
  CHECK(result_of("return 1") == "1");
  auto after = pool().stats();
  CHECK(after.failed - before.failed == 2);
  CHECK(after.completed - before.completed == 1);
  CHECK(after.failed_by_kind[kind(FailureKind::runtime_error)] -
            before.failed_by_kind[kind(FailureKind::runtime_error)] == 1);
  CHECK(after.failed_by_kind[kind(FailureKind::syntax_error)] -
            before.failed_by_kind[kind(FailureKind::syntax_error)] == 1);
  CHECK(after.failed_by_kind[kind(FailureKind::memory_limit)] ==
        before.failed_by_kind[kind(FailureKind::memory_limit)]);
  CHECK(after.failed_by_kind[0] == 0);  // no kind has wire value 0
}

TEST_CASE("engine: syntax errors come back as syntax_error with line and column") {
  std::string message;
  CHECK(failure_of("const a = 1;\nconst = 2;", small_limits(), &message) == FailureKind::syntax_error);
  CHECK(message.find("line 2") != std::string::npos);
  CHECK(failure_of("%DebugPrint(1)", small_limits(), &message) == FailureKind::syntax_error);
}

TEST_CASE("engine: limits end only the execution, each with its own kind") {
  Limits l = small_limits();
  std::string message;
  SUBCASE("heap bomb") {
    l.heap_bytes = 16ull << 20;
    CHECK(failure_of("const a = []; while (true) a.push('x'.repeat(64) + Math.random());", l, &message) ==
          FailureKind::memory_limit);
    CHECK(message.find("16 MiB") != std::string::npos);
  }
  SUBCASE("live data under the limit, with much garbage made around it, is allowed") {
    // 10 MiB of doubles kept, 160 MiB of short-lived arrays: full collections find the
    // live heap under 16 MiB every time, however much was allocated.
    l.heap_bytes = 16ull << 20;
    CHECK(result_of("const keep = new Array(1250000).fill(0.5); let sum = 0;"
                    "for (let i = 0; i < 200; i++) { const g = new Array(100000).fill(i + 0.5); sum += g[7]; }"
                    "return keep.length + sum", l) == "1270000");
  }
  SUBCASE("ArrayBuffer bomb") {
    l.heap_bytes = 16ull << 20;
    CHECK(failure_of("const a = []; while (true) a.push(new ArrayBuffer(1 << 20));", l, &message) ==
          FailureKind::memory_limit);
    CHECK(message.find("ArrayBuffer") != std::string::npos);
  }
  SUBCASE("while (true)") {
    l.cpu_ms = 200;
    CHECK(failure_of("while (true) {}", l, &message) == FailureKind::cpu_limit);
    CHECK(message.find("200 ms") != std::string::npos);
  }
  SUBCASE("deep recursion") {
    CHECK(failure_of("const f = (n) => f(n + 1) + 1; return f(0)", l, &message) == FailureKind::stack_limit);
    CHECK(message.find("1 MiB") != std::string::npos);
  }
  SUBCASE("caught stack overflow is the code's business") {
    CHECK(result_of("const f = (n) => f(n + 1) + 1; try { f(0) } catch (e) { return e instanceof RangeError }") ==
          "true");
  }
  SUBCASE("log flood") {
    l.log_bytes = 4096;
    CHECK(failure_of("while (true) console.log('spam spam spam')", l, &message) == FailureKind::log_limit);
  }
  SUBCASE("emit flood") {
    l.output_bytes = 4096;
    CHECK(failure_of("while (true) emit({spam: 'spam spam'})", l, &message) == FailureKind::output_limit);
  }
  SUBCASE("result over the output limit") {
    l.output_bytes = 1024;
    CHECK(failure_of("return 'x'.repeat(2000)", l, &message) == FailureKind::output_limit);
  }
  SUBCASE("tool-call flood") {
    l.tool_calls = 5;
    CHECK(failure_of("for (let i = 0; i < 10; i++) await tools.echo({i}); return 'done'", l, &message) ==
          FailureKind::tool_call_limit);
    CHECK(message.find("5 tool calls") != std::string::npos);
  }
  SUBCASE("too many concurrent tool calls") {
    l.concurrent_tool_calls = 3;
    CHECK(failure_of("await Promise.all([1, 2, 3, 4].map(i => tools.echo({i})))", l, &message) ==
          FailureKind::tool_concurrency_limit);
  }
  SUBCASE("a promise that never settles, with no tool outstanding") {
    l.wall_ms = 200;
    CHECK(failure_of("await new Promise(() => {})", l, &message) == FailureKind::wall_limit);
    CHECK(message.find("200 ms") != std::string::npos);
  }
}

TEST_CASE("engine: time waiting for a tool does not count against the wall limit") {
  Limits l = small_limits();
  l.wall_ms = 300;
  Run run = start("const r = await tools.slow(); return r", l);
  REQUIRE(run.rec->wait_calls(1));
  // Longer than the wall limit, spent waiting on the tool: not an overrun.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  run.exec->deliver_tool_result(1, true, R"("done")");
  REQUIRE(run.rec->wait_done());
  INFO((run.rec->failure ? run.rec->failure->second : ""));
  CHECK(run.rec->result == std::optional<std::string>(R"("done")"));
}

TEST_CASE("engine: cancel ends a running execution with kind cancelled") {
  Run run = start("await tools.forever(); return 1");
  REQUIRE(run.rec->wait_calls(1));
  run.exec->cancel();
  REQUIRE(run.rec->wait_done());
  CHECK(run.rec->failure_kind() == FailureKind::cancelled);
  run.exec->deliver_tool_result(1, true, "1");  // too late: ignored
  run.exec->cancel();
}

TEST_CASE("engine: a cancel after the end changes nothing") {
  // An owner may cancel on hearing the outcome (a session does when it settles); that
  // must neither turn the outcome into a failure nor disturb the next execution.
  auto before = pool().stats();
  Run run = finish("return 7");
  run.exec->cancel();
  run.exec->cancel();
  CHECK(result_of("return 8") == "8");
  auto after = pool().stats();
  CHECK(run.rec->result == std::optional<std::string>("7"));
  CHECK_FALSE(run.rec->failure);
  CHECK(after.completed - before.completed == 2);
  CHECK(after.failed == before.failed);
}

TEST_CASE("engine: a start and a tool result larger than a socket takes at once arrive whole") {
  // A thread that starts an execution, or answers a call, while the pool thread waits
  // writes to the slot itself; what the socket cannot take then is left for the pool
  // thread, which must be woken to send it. Heartbeats a minute apart: nothing else wakes
  // that thread before the waits below give up.
  PoolOptions options = test_pool_options(1, 1);
  options.heartbeat = std::chrono::minutes(1);
  auto created = Pool::create(options);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  auto quiet = std::move(*created);
  const std::string padding(600'000, 'x');
  auto rec = std::make_shared<Recorder>();
  auto started = quiet->start(
      ExecutionRequest{
          "big",
          "/*" + padding + "*/ const v = await tools.big(); return [v.length, v.slice(-3)]",
          small_limits(),
          {}},
      rec);
  REQUIRE(started.ok());
  Run run{rec, *started};
  REQUIRE(run.rec->wait_calls(1, std::chrono::seconds(20)));
  run.exec->deliver_tool_result(1, true, "\"" + std::string(3'000'000, 'y') + "zzz\"");
  REQUIRE(run.rec->wait_done(std::chrono::seconds(20)));
  INFO((run.rec->failure ? run.rec->failure->second : ""));
  CHECK(run.rec->result == std::optional<std::string>(R"([3000003,"zzz"])"));
}

TEST_CASE("engine: executions started and answered from many threads at once all end right") {
  // Starts and tool results from several threads race with each other and with the pool
  // thread: each either acts while the pool thread waits or is queued for it.
  constexpr int kThreads = 6;
  constexpr int kEach = 12;
  const std::string code =
      "let s = 0; for (let i = 1; i <= 3; i++) s += (await tools.add({i})).n; return s";
  auto before = pool().stats();
  std::vector<std::thread> threads;
  std::vector<int> right(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kEach; ++n) {
        auto rec = std::make_shared<Recorder>();
        auto started = pool().start(ExecutionRequest{"many", code, small_limits(), {}}, rec);
        if (!started.ok()) return;
        auto exec = *started;
        for (std::uint32_t seq = 1; seq <= 3; ++seq) {
          if (!rec->wait_calls(seq)) return;
          exec->deliver_tool_result(seq, true, R"({"n":)" + std::to_string(seq * (t + 1)) + "}");
        }
        if (!rec->wait_done()) return;
        if (rec->result == std::optional<std::string>(std::to_string(6 * (t + 1)))) ++right[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(right[t] == kEach);
  auto after = pool().stats();
  CHECK(after.completed - before.completed == kThreads * kEach);
  CHECK(after.failed == before.failed);
}

TEST_CASE("engine: results of concurrent calls, delivered out of order, replay in the recorded order") {
  const std::string code =
      "const order = [];"
      "const a = tools.a().then(v => order.push('a:' + v.n));"
      "const b = tools.b().then(v => order.push('b:' + v.n));"
      "await Promise.all([a, b]);"
      "return {order, r: Math.random(), t: Date.now(), c: (await tools.c()).n}";
  Run live = start(code);
  REQUIRE(live.rec->wait_calls(2));
  live.exec->deliver_tool_result(2, true, R"({"n":2})");
  test_clock().advance(10);
  live.exec->deliver_tool_result(1, true, R"({"n":1})");
  REQUIRE(live.rec->wait_calls(3));
  live.exec->deliver_tool_result(3, true, R"({"n":3})");
  REQUIRE(live.rec->wait_done());
  REQUIRE(live.rec->result);
  CHECK(live.rec->result->starts_with(R"({"order":["b:2","a:1"])"));

  // Replaying the journal rebuilds the same execution without calling anything.
  Journal journal = live.exec->journal();
  CHECK(journal.entries.size() == 6);  // three calls, three results
  Run replay = start(code, small_limits(), journal);
  REQUIRE(replay.rec->wait_done());
  REQUIRE(replay.rec->result);
  CHECK(*replay.rec->result == *live.rec->result);
  CHECK(replay.rec->calls.empty());
}

TEST_CASE("engine: a replay continues live after the journal ends") {
  Run live = start("const x = await tools.first(); const y = await tools.second({x: x.v}); return [x.v, y.v]");
  REQUIRE(live.rec->wait_calls(1));
  live.exec->deliver_tool_result(1, true, R"({"v":1})");
  REQUIRE(live.rec->wait_calls(2));
  Journal paused = live.exec->journal();  // a call outstanding: as if paused for approval
  live.exec->cancel();
  REQUIRE(live.rec->wait_done());

  Run resumed = start("const x = await tools.first(); const y = await tools.second({x: x.v}); return [x.v, y.v]",
                      small_limits(), paused);
  // The open call was already made: the host answers it; no new call is reported.
  resumed.exec->deliver_tool_result(2, true, R"({"v":2})");
  REQUIRE(resumed.rec->wait_done());
  INFO((resumed.rec->failure ? resumed.rec->failure->second : ""));
  CHECK(resumed.rec->result == std::optional<std::string>("[1,2]"));
  CHECK(resumed.rec->calls.empty());
}

TEST_CASE("engine: replay with a changed script fails nondeterministic_replay, naming both paths") {
  Run live = finish("const a = await tools.alpha({k: 1}); return a.args.k");
  Journal journal = live.exec->journal();
  Run changed = start("const a = await tools.beta({k: 1}); return a.args.k", small_limits(), journal);
  REQUIRE(changed.rec->wait_done());
  REQUIRE(changed.rec->failure);
  CHECK(changed.rec->failure->first == FailureKind::nondeterministic_replay);
  CHECK(changed.rec->failure->second.find("tool call 1") != std::string::npos);
  CHECK(changed.rec->failure->second.find("alpha") != std::string::npos);
  CHECK(changed.rec->failure->second.find("beta") != std::string::npos);
}

TEST_CASE("engine: a 100-call journal replays to the same result") {
  const std::string code = "let s = 0; for (let i = 0; i < 100; i++) s += (await tools.echo({i})).args.i; return s";
  Run live = finish(code);
  REQUIRE(live.rec->result);
  CHECK(*live.rec->result == "4950");
  Run replay = start(code, small_limits(), live.exec->journal());
  REQUIRE(replay.rec->wait_done());
  CHECK(replay.rec->result == live.rec->result);
  CHECK(replay.rec->calls.empty());
}

TEST_CASE("engine: bad requests are refused before anything runs") {
  auto rec = std::make_shared<Recorder>();
  Limits l;
  l.heap_bytes = 1;
  auto refused = pool().start(ExecutionRequest{"x", "return 1", l, {}}, rec);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("heap_bytes") != std::string::npos);
  auto too_big = pool().start(ExecutionRequest{"x", std::string(2u << 20, ' '), Limits{}, {}}, rec);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().code == dorm::ErrorCode::limit_exceeded);
  Journal bad;
  bad.entries.push_back(ToolCallEntry{5, "x", "{}"});
  CHECK_FALSE(pool().start(ExecutionRequest{"x", "return 1", Limits{}, bad}, rec).ok());
  CHECK(rec->endings == 0);
}

TEST_CASE("engine: with polling before sleep off, tool calls are answered the same; a budget over 10 ms is refused") {
  PoolOptions options = test_pool_options(1, 1);
  options.poll_before_sleep = std::chrono::microseconds(0);
  auto created = Pool::create(options);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  auto rec = std::make_shared<Recorder>([](const ToolCallEntry& c) {
    return std::make_optional(std::make_pair(true, "{\"n\":" + std::to_string(c.seq) + "}"));
  });
  auto started = (*created)->start(
      ExecutionRequest{"no-poll", "let s = 0; for (let i = 0; i < 20; i++) s += (await tools.t({i})).n; return s",
                       small_limits(), {}},
      rec);
  REQUIRE(started.ok());
  rec->attach(*started);
  REQUIRE(rec->wait_done());
  REQUIRE(rec->result.has_value());
  CHECK(*rec->result == "210");
  CHECK(rec->calls.size() == 20);

  options.poll_before_sleep = std::chrono::microseconds(10'001);
  check_refused(options, "poll_before_sleep");
}

namespace {

// Notes which thread heard of the outcome, and whether start() had returned by then.
class OutcomeThread final : public ExecutionObserver {
 public:
  std::atomic<bool> start_returned{false};
  void on_tool_call(const ToolCallEntry&) override {}
  void on_completed(std::string_view json) override { end(std::string(json)); }
  void on_failed(FailureKind, std::string_view message) override {
    end("!" + std::string(message));
  }
  bool wait(std::string& result) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::seconds(60), [&] { return done_; })) return false;
    result = result_;
    return true;
  }
  std::thread::id thread;
  bool before_return = false;

 private:
  void end(std::string result) {
    {
      std::lock_guard lock(mutex_);
      thread = std::this_thread::get_id();
      before_return = !start_returned.load();
      result_ = std::move(result);
      done_ = true;
    }
    cv_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string result_;
};

// Waits (at most 20 s) until no slot of `p` is making a context: start() polls only with a
// core to spare.
bool quiet(Pool& p) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p.stats().warming > 0) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Runs `return 1` `n` times, one after another (each on a quiet `p` if `wait_quiet`);
// counts the executions whose outcome reached the observer on this thread inside start().
// Every result must be 1.
int outcomes_inside_start(Pool& p, int n, bool wait_quiet = true) {
  int inside = 0;
  for (int i = 0; i < n; ++i) {
    if (wait_quiet) REQUIRE(quiet(p));
    auto obs = std::make_shared<OutcomeThread>();
    auto started = p.start(ExecutionRequest{"quick", "return 1", small_limits(), {}}, obs);
    obs->start_returned = true;
    REQUIRE(started.ok());
    std::string result;
    REQUIRE(obs->wait(result));
    CHECK(result == "1");
    if (obs->before_return) {
      CHECK(obs->thread == std::this_thread::get_id());
      ++inside;
    }
  }
  return inside;
}

}  // namespace

TEST_CASE(
    "engine: start() polls for a quick outcome, which the caller's thread then reports before "
    "start() returns") {
  // The largest budget, so a sanitizer build's slower slot still answers within it.
  PoolOptions options = test_pool_options(1, 2);
  options.start_polls_for_outcome = std::chrono::microseconds(10'000);
  auto created = Pool::create(options);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  Pool& polling = **created;
  // On a quiet pool the caller spins; back to back, with the last execution's slot making
  // its next context, a 2-core machine has no core to spare and the caller sleeps in
  // ppoll() instead: the outcome comes to it either way.
  CHECK(outcomes_inside_start(polling, 20) > 0);
  CHECK(outcomes_inside_start(polling, 20, /*wait_quiet=*/false) > 0);

  SUBCASE("an execution waiting for a tool does not keep the next one from being polled for") {
    auto waiting = std::make_shared<Recorder>();
    auto started = polling.start(
        ExecutionRequest{"waits", "return (await tools.later()).n + 1", small_limits(), {}},
        waiting);
    REQUIRE(started.ok());
    waiting->attach(*started);
    REQUIRE(waiting->wait_calls(1));
    CHECK(polling.stats().running == 1);
    CHECK(outcomes_inside_start(polling, 20) > 0);
    (*started)->deliver_tool_result(1, true, R"({"n":41})");
    REQUIRE(waiting->wait_done());
    CHECK(waiting->result == std::optional<std::string>("42"));
  }
  SUBCASE("a code's first tool call ends the poll; the call is answered after start() returns") {
    auto rec = std::make_shared<Recorder>([](const ToolCallEntry& c) {
      return std::make_optional(std::make_pair(true, "{\"n\":" + std::to_string(c.seq) + "}"));
    });
    auto started = polling.start(
        ExecutionRequest{
            "calls",
            "let s = 0; for (let i = 0; i < 5; i++) s += (await tools.t()).n; return s",
            small_limits(),
            {}},
        rec);
    REQUIRE(started.ok());
    rec->attach(*started);
    REQUIRE(rec->wait_done());
    CHECK(rec->result == std::optional<std::string>("15"));
  }
}

TEST_CASE(
    "engine: with the start poll off, outcomes come on the pool thread; a budget over 10 ms is "
    "refused") {
  PoolOptions options = test_pool_options(1, 2);
  options.start_polls_for_outcome = std::chrono::microseconds(0);
  auto created = Pool::create(options);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  CHECK(outcomes_inside_start(**created, 10) == 0);

  options.start_polls_for_outcome = std::chrono::microseconds(10'001);
  check_refused(options, "start_polls_for_outcome");
}

namespace {

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("engine: a slot that goes quiet gives its finished executions' memory back; a trim over 10 minutes is refused") {
  PoolOptions options = test_pool_options(1, 1);
  options.idle_trim = std::chrono::milliseconds(100);
  auto created = Pool::create(options);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  Pool& pool = **created;
  const pid_t worker = pool.worker_pids().at(0);
  const long before = rss_kib(worker);
  // About 30 MB of objects, alive until the execution ends, garbage after it.
  auto rec = std::make_shared<Recorder>([](const ToolCallEntry&) {
    return std::make_optional(std::make_pair(true, std::string("{}")));
  });
  auto started = pool.start(
      ExecutionRequest{"garbage",
                       "const a = []; for (let i = 0; i < 250000; i++) a.push({i, s: 'x'.repeat(40) + i});"
                       "await tools.hold(); return a.length",
                       Limits{}, {}},
      rec);
  REQUIRE(started.ok());
  rec->attach(*started);
  REQUIRE(rec->wait_calls(1));
  const long peak = rss_kib(worker);  // the objects are alive now
  CAPTURE(before);
  CAPTURE(peak);
  REQUIRE(peak - before > 20'000);
  REQUIRE(rec->wait_done());
  CHECK(*rec->result == "250000");
  // Within a bounded wait, the quiet slot collects and at least half of what the execution
  // added comes back (not all: the allocator keeps some, and AddressSanitizer's more).
  const long half_back = before + (peak - before) / 2;
  long now = peak;
  for (int i = 0; i < 200 && now > half_back; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    now = rss_kib(worker);
  }
  CAPTURE(now);
  CHECK(now <= half_back);

  options.idle_trim = std::chrono::minutes(10) + std::chrono::milliseconds(1);
  auto refused = Pool::create(options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("idle_trim") != std::string::npos);
}
