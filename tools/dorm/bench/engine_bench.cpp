// `dorm bench engine`: what an `execute` costs, measured three ways in one run, interleaved
// round by round:
//   dorm  — engine::Pool: two sandboxed worker processes, frames over a socketpair, a warm
//           context per execution;
//   bare  — V8 in this process: a context created in an already-entered isolate, the same
//           async wrapper, no worker, no IPC, no limits (the floor dorm pays its sandbox on);
//   qjs   — the original system's shape: QuickJS in WebAssembly with a new runtime per
//           execution (the peer's own bench.mjs, run with node for each round).
// Each figure is the median over rounds. Nothing here is asserted: the numbers go to
// docs/benchmarks.md.
#include "engine_bench.hpp"

#include <libplatform/libplatform.h>
#include <rapidjson/document.h>
#include <v8.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench_stats.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/engine/v8_process.hpp"
#include "source_root.hpp"

namespace dorm::bench {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Waits for one execution's end; answers every tool call at once with {"n": seq}.
class Waiter final : public engine::ExecutionObserver {
 public:
  std::weak_ptr<engine::Execution> exec;
  void on_tool_call(const engine::ToolCallEntry& call) override {
    if (auto e = exec.lock()) e->deliver_tool_result(call.seq, true, "{\"n\":" + std::to_string(call.seq) + "}");
    else pending_.push_back(call.seq);
  }
  void on_completed(std::string_view json) override { end(std::string(json), {}); }
  void on_failed(engine::FailureKind kind, std::string_view message) override {
    end({}, std::string(engine::to_string(kind)) + ": " + std::string(message));
  }
  void attach(std::shared_ptr<engine::Execution> e) {
    exec = e;
    for (auto seq : pending_) e->deliver_tool_result(seq, true, "{\"n\":" + std::to_string(seq) + "}");
  }
  // Returns the result JSON, or "!kind: message".
  std::string wait() {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::minutes(2), [&] { return done_; })) give_up_waiting("an execution");
    return failure_.empty() ? result_ : "!" + failure_;
  }
  Clock::time_point ended_at() {
    std::lock_guard lock(mutex_);
    return ended_;
  }

 private:
  void end(std::string result, std::string failure) {
    {
      std::lock_guard lock(mutex_);
      result_ = std::move(result);
      failure_ = std::move(failure);
      ended_ = Clock::now();
      done_ = true;
    }
    cv_.notify_all();
  }
  std::vector<std::uint32_t> pending_;  // calls before attach (pool thread only, before attach)
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string result_, failure_;
  Clock::time_point ended_;
};

struct Started {
  std::shared_ptr<Waiter> waiter;
  std::shared_ptr<engine::Execution> exec;
};

Started start(engine::Pool& pool, const std::string& code, engine::Limits limits = {},
              std::optional<engine::Journal> journal = {}) {
  auto waiter = std::make_shared<Waiter>();
  auto started = pool.start({"bench", code, limits, std::move(journal)}, waiter);
  if (!started) give_up_waiting(started.error().describe().c_str());
  waiter->attach(*started);
  return {waiter, *started};
}

std::string run(engine::Pool& pool, const std::string& code, engine::Limits limits = {}) {
  return start(pool, code, limits).waiter->wait();
}

struct Latency {
  double p50 = 0, p99 = 0, per_s = 0;
};

// Runs `code` `runs` times, one after another; with a `gap`, each run starts that long
// after the previous one ended (a caller with pauses between executions, as an agent
// has, rather than one that keeps the pool busy).
Latency sequential(engine::Pool& pool, const std::string& code, int runs, const std::string& expect,
                   std::chrono::microseconds gap = {}) {
  std::vector<double> lat;
  auto t0 = Clock::now();
  for (int i = 0; i < runs; ++i) {
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    auto t = Clock::now();
    std::string r = run(pool, code);
    lat.push_back(ms_since(t));
    if (r != expect) give_up_waiting(("unexpected result " + r).c_str());
  }
  return {percentile(lat, 50), percentile(lat, 99), runs / seconds_since(t0)};
}

double concurrent(engine::Pool& pool, const std::string& code, int runs, int in_flight) {
  auto t0 = Clock::now();
  std::vector<Started> window;
  int started = 0;
  while (started < runs || !window.empty()) {
    while (started < runs && static_cast<int>(window.size()) < in_flight) {
      window.push_back(start(pool, code));
      ++started;
    }
    window.front().waiter->wait();
    window.erase(window.begin());
  }
  return runs / seconds_since(t0);
}

// ---- bare V8: the same wrapper in a context of an already-entered isolate ----

class BareV8 {
 public:
  BareV8() {
    engine::v8_platform();
    allocator_.reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
    v8::Isolate::CreateParams params;
    params.array_buffer_allocator = allocator_.get();
    isolate_ = v8::Isolate::New(params);
    isolate_->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  }
  ~BareV8() { isolate_->Dispose(); }

  Latency trivial(int runs, std::chrono::microseconds gap = {}) {
    v8::Isolate::Scope scope(isolate_);
    std::vector<double> lat;
    auto t0 = Clock::now();
    for (int i = 0; i < runs; ++i) {
      if (gap.count() > 0) std::this_thread::sleep_for(gap);
      auto t = Clock::now();
      v8::HandleScope handles(isolate_);
      auto context = v8::Context::New(isolate_);
      v8::Context::Scope cs(context);
      auto src = v8::String::NewFromUtf8Literal(isolate_, "(async () => {\"use strict\";\nreturn 1\n})()");
      auto value = v8::Script::Compile(context, src).ToLocalChecked()->Run(context).ToLocalChecked();
      isolate_->PerformMicrotaskCheckpoint();
      auto json = v8::JSON::Stringify(context, value.As<v8::Promise>()->Result()).ToLocalChecked();
      if (json->Length() != 1) give_up_waiting("bare V8 returned something else");
      lat.push_back(ms_since(t));
    }
    return {percentile(lat, 50), percentile(lat, 99), runs / seconds_since(t0)};
  }

 private:
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_;
};

// ---- the QuickJS peer: node bench.mjs, one JSON line per case ----

// Runs `cmd` and parses each line it prints as a JSON object; other lines are skipped.
std::vector<rapidjson::Document> json_lines(const std::string& cmd) {
  std::vector<rapidjson::Document> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::string line;
  for (int c; (c = std::fgetc(p)) != EOF;) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    rapidjson::Document d;
    if (!d.Parse(line.data(), line.size()).HasParseError() && d.IsObject())
      out.push_back(std::move(d));
    line.clear();
  }
  pclose(p);
  return out;
}

// The number `key` of `o`, or -1 when it has none.
double number(const rapidjson::Value& o, const char* key) {
  auto m = o.FindMember(key);
  return m != o.MemberEnd() && m->value.IsNumber() ? m->value.GetDouble() : -1;
}

std::string case_name(const rapidjson::Value& o) {
  auto m = o.FindMember("case");
  return m != o.MemberEnd() && m->value.IsString() ? m->value.GetString() : "";
}

std::map<std::string, std::map<std::string, double>> quickjs_round(const std::string& dir,
                                                                   int runs) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& d : json_lines("cd '" + dir + "' && node bench.mjs --runs " +
                                  std::to_string(runs) + " 2>/dev/null")) {
    std::string c = case_name(d);
    std::string name = c.starts_with("trivial")          ? "trivial"
                       : c.starts_with("100 sequential") ? "tools100"
                       : c.starts_with("memory bomb")    ? "bomb"
                                                         : "";
    if (name.empty()) continue;
    out[name] = {{"p50", number(d, "p50_ms")},
                 {"p99", number(d, "p99_ms")},
                 {"per_s", number(d, "per_s")},
                 {"ms", number(d, "ms")}};
  }
  return out;
}

// tools/bench/quickjs_paced.mjs: the QuickJS shape's trivial execution back to back and
// paced like the paced rows (the peer's bench.mjs runs back to back only). Its
// back-to-back figure is printed beside the peer's, to show the driver matches the peer.
struct QuickJsPaced {
  double back_to_back_p50 = -1, paced_p50 = -1, paced_p99 = -1;
};

QuickJsPaced quickjs_paced_round(const std::string& dir, int runs, int paced_runs,
                                 std::chrono::microseconds gap) {
  QuickJsPaced out;
  std::string cmd = std::string("node '") + kSourceRoot +
                    "/tools/bench/quickjs_paced.mjs' --quickjs-dir '" + dir + "' --runs " +
                    std::to_string(runs) + " --paced-runs " + std::to_string(paced_runs) +
                    " --gap-ms " + std::to_string(gap.count() / 1000.0) + " 2>/dev/null";
  for (const auto& d : json_lines(cmd)) {
    std::string c = case_name(d);
    if (c == "trivial back to back") {
      out.back_to_back_p50 = number(d, "p50_ms");
    } else if (c == "trivial paced") {
      out.paced_p50 = number(d, "p50_ms");
      out.paced_p99 = number(d, "p99_ms");
    }
  }
  return out;
}

std::string tool_loop(int calls) {
  return "let s = 0; for (let i = 0; i < " + std::to_string(calls) +
         "; i++) { const r = await tools.echo({i}); s += r.n; } return s;";
}

// The paced rows: executions 2 ms apart, a quarter as many as back to back (the gaps
// would otherwise dominate a round's time).
constexpr std::chrono::microseconds kPacedGap{2'000};
int paced_runs(const EngineBenchOptions& o) {
  return std::max(20, o.trivial_runs / 4);
}

// Each round's figures per subject (d: dorm, b: bare V8, q: the QuickJS peer).
struct EngineFigures {
  std::vector<double> d_p50, d_p99, d_c1, d_c16, b_p50, b_p99, b_c1, q_p50, q_p99, q_c1;
  std::vector<double> d_paced_p50, d_paced_p99, b_paced_p50, b_paced_p99;
  std::vector<double> q_driver_p50, q_paced_p50, q_paced_p99;  // quickjs_paced.mjs
  std::vector<double> d_tools_p50, d_tools_s, q_tools_p50, q_tools_s, d_bomb, q_bomb, d_term;
  std::map<int, std::vector<double>> replay_ms;
  long worker1 = 0, worker9 = 0;  // RSS KiB of a worker with 1 and with 9 warm slots
};

// A memory bomb and `while (true) {}` against the pool's limits.
void dorm_limits_round(engine::Pool& pool, EngineFigures& f) {
  {
    auto t = Clock::now();
    std::string r = run(pool, "const a = []; while (true) a.push('x'.repeat(1024));");
    f.d_bomb.push_back(ms_since(t));
    if (r.rfind("!memory_limit", 0) != 0)
      std::fprintf(stderr, "memory bomb ended as %s\n", r.substr(0, 80).c_str());
  }
  {
    engine::Limits l;
    l.cpu_ms = 100;
    auto t = Clock::now();
    auto s = start(pool, "while (true) {}", l);
    std::string r = s.waiter->wait();
    f.d_term.push_back(std::chrono::duration<double, std::milli>(s.waiter->ended_at() - t).count() -
                       100.0);
    if (r.rfind("!cpu_limit", 0) != 0)
      std::fprintf(stderr, "while(true) ended as %s\n", r.substr(0, 80).c_str());
  }
}

void dorm_round(engine::Pool& pool, const EngineBenchOptions& o, EngineFigures& f) {
  const std::string tools100 = tool_loop(100);
  const std::string tools100_result = "5050";
  for (int i = 0; i < 50; ++i) run(pool, "return 1");  // warm every slot's JIT a little
  Latency d = sequential(pool, "return 1", o.trivial_runs, "1");
  f.d_p50.push_back(d.p50);
  f.d_p99.push_back(d.p99);
  f.d_c1.push_back(d.per_s);
  f.d_c16.push_back(concurrent(pool, "return 1", o.trivial_runs * 2, 16));
  Latency paced = sequential(pool, "return 1", paced_runs(o), "1", kPacedGap);
  f.d_paced_p50.push_back(paced.p50);
  f.d_paced_p99.push_back(paced.p99);
  Latency dt = sequential(pool, tools100, o.tool_runs, tools100_result);
  f.d_tools_p50.push_back(dt.p50);
  f.d_tools_s.push_back(dt.per_s);
  dorm_limits_round(pool, f);
  for (int calls : {10, 100, 1000}) {
    engine::Limits l;
    l.tool_calls = 1000;
    auto live = start(pool, tool_loop(calls), l);
    live.waiter->wait();
    auto t = Clock::now();
    auto again = start(pool, tool_loop(calls), l, live.exec->journal());
    again.waiter->wait();
    f.replay_ms[calls].push_back(ms_since(t));
  }
}

void peers_round(BareV8& bare, const EngineBenchOptions& o, EngineFigures& f) {
  Latency b = bare.trivial(o.trivial_runs);
  f.b_p50.push_back(b.p50);
  f.b_p99.push_back(b.p99);
  f.b_c1.push_back(b.per_s);
  Latency bp = bare.trivial(paced_runs(o), kPacedGap);
  f.b_paced_p50.push_back(bp.p50);
  f.b_paced_p99.push_back(bp.p99);
  if (!o.quickjs_dir.empty()) {
    auto q = quickjs_round(o.quickjs_dir, o.trivial_runs);
    f.q_p50.push_back(q["trivial"]["p50"]);
    f.q_p99.push_back(q["trivial"]["p99"]);
    f.q_c1.push_back(q["trivial"]["per_s"]);
    f.q_tools_p50.push_back(q["tools100"]["p50"]);
    f.q_tools_s.push_back(q["tools100"]["per_s"]);
    f.q_bomb.push_back(q["bomb"]["ms"]);
    auto qp = quickjs_paced_round(o.quickjs_dir, o.trivial_runs, paced_runs(o), kPacedGap);
    f.q_driver_p50.push_back(qp.back_to_back_p50);
    f.q_paced_p50.push_back(qp.paced_p50);
    f.q_paced_p99.push_back(qp.paced_p99);
  }
}

// Memory: one worker with one slot, then with nine; the difference over eight slots is
// what a warm idle isolate (with its context and source preparer) costs. False if a pool
// could not be created.
bool measure_worker_memory(const engine::PoolOptions& options, EngineFigures& f) {
  for (unsigned slots : {1u, 9u}) {
    engine::PoolOptions m = options;
    m.workers = 1;
    m.slots_per_worker = slots;
    auto p = engine::Pool::create(m);
    if (!p) return false;
    for (int i = 0; i < 20; ++i) run(**p, "return 1");
    long rss = process_rss_kib((*p)->worker_pids().at(0));
    (slots == 1 ? f.worker1 : f.worker9) = rss;
  }
  return true;
}

void print_row(const char* name, double d, double b, double q) {
  std::printf("%-44s %10.3f %10s %10s\n", name, d,
              b >= 0 ? std::to_string(b).substr(0, 8).c_str() : "-",
              q >= 0 ? std::to_string(q).substr(0, 8).c_str() : "-");
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

void print_figures(const EngineBenchOptions& o, const EngineFigures& f) {
  std::printf("dorm bench engine: %d rounds, medians; %d trivial runs, %d runs of 100 tool calls per round\n",
              o.rounds, o.trivial_runs, o.tool_runs);
  std::printf("%-44s %10s %10s %10s\n", "case", "dorm", "bare V8", "QuickJS");
  bool qjs = !f.q_c1.empty();
  print_row("trivial p50 ms (concurrency 1)", median(f.d_p50), median(f.b_p50),
            qjs ? median(f.q_p50) : -1);
  print_row("trivial p99 ms (concurrency 1)", median(f.d_p99), median(f.b_p99),
            qjs ? median(f.q_p99) : -1);
  print_row("trivial executions/s (concurrency 1)", median(f.d_c1), median(f.b_c1),
            qjs ? median(f.q_c1) : -1);
  print_row("trivial executions/s (concurrency 16)", median(f.d_c16), -1,
            qjs ? median(f.q_c1) : -1);
  print_row("trivial p50 ms, 2 ms between executions", median(f.d_paced_p50), median(f.b_paced_p50),
            qjs ? median(f.q_paced_p50) : -1);
  print_row("trivial p99 ms, 2 ms between executions", median(f.d_paced_p99), median(f.b_paced_p99),
            qjs ? median(f.q_paced_p99) : -1);
  print_row("100 sequential tool calls p50 ms", median(f.d_tools_p50), -1,
            qjs ? median(f.q_tools_p50) : -1);
  print_row("100 sequential tool calls executions/s", median(f.d_tools_s), -1,
            qjs ? median(f.q_tools_s) : -1);
  print_row("memory bomb to its error ms", median(f.d_bomb), -1, qjs ? median(f.q_bomb) : -1);
  print_row("while(true): error ms after the CPU limit", median(f.d_term), -1, -1);
  for (auto& [calls, v] : f.replay_ms) {
    print_row(("replay of " + std::to_string(calls) + " journaled calls ms").c_str(), median(v), -1,
              -1);
  }
  std::printf("%-44s %10ld\n", "worker RSS KiB (1 warm slot)", f.worker1);
  std::printf("%-44s %10.0f\n", "RSS KiB per extra warm idle isolate",
              (f.worker9 - f.worker1) / 8.0);
  if (qjs) {
    std::printf(
        "\nratios: trivial p50 dorm/QuickJS %.2f; executions/s at 16 dorm/QuickJS %.2f; "
        "100 tool calls p50 dorm/QuickJS %.2f; memory bomb QuickJS/dorm %.1fx\n",
        ratio(median(f.d_p50), median(f.q_p50)), ratio(median(f.d_c16), median(f.q_c1)),
        ratio(median(f.d_tools_p50), median(f.q_tools_p50)),
        ratio(median(f.q_bomb), median(f.d_bomb)));
  }
  if (qjs) {
    std::printf(
        "paced (2 ms between executions, QuickJS by tools/bench/quickjs_paced.mjs, whose "
        "back-to-back "
        "p50 was %.3f ms against the peer's %.3f): trivial p50 dorm/QuickJS %.2f\n",
        median(f.q_driver_p50), median(f.q_p50),
        ratio(median(f.d_paced_p50), median(f.q_paced_p50)));
  }
  std::printf("ratio: trivial p50 dorm/bare V8 %.2f\n", ratio(median(f.d_p50), median(f.b_p50)));
}

}  // namespace

int run_engine_bench(const EngineBenchOptions& o) {
  engine::PoolOptions options;
  options.worker_path = o.worker_path.empty() ? engine::default_worker_path() : o.worker_path;
  options.workers = 2;
  options.slots_per_worker = 8;
  options.keep_worker_stderr = std::getenv("DORM_BENCH_WORKER_STDERR") != nullptr;
  auto created = engine::Pool::create(options);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().describe().c_str());
    return 1;
  }
  engine::Pool& pool = **created;
  BareV8 bare;
  EngineFigures figures;
  for (int round = 0; round < o.rounds; ++round) {
    dorm_round(pool, o, figures);
    peers_round(bare, o, figures);
    // Each round's own figures, so growth over a run shows.
    std::fprintf(stderr, "round %d done: dorm trivial p50 %.3f ms, concurrency 16 %.0f/s, 100 tool calls p50 %.3f ms\n",
                 round + 1, figures.d_p50.back(), figures.d_c16.back(), figures.d_tools_p50.back());
  }
  if (!measure_worker_memory(options, figures)) return 1;
  print_figures(o, figures);
  return 0;
}

}  // namespace dorm::bench
