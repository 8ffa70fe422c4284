// `dorm bench execute`: what code mode costs inside an MCP session, measured in process.
//
// One threaded Runtime over RocksDB (durability "process", as `dorm serve`'s default URI),
// the session namespace with the "testing" fixtures, and code mode on a real engine::Pool
// (dorm-engine-worker processes, `dorm serve`'s default pool size). Requests go to the
// session as SessionCall messages and come back through a Responder, as the HTTP endpoint
// sends and receives them, but with no HTTP: what is measured is the session and the engine.
// Every call is sent alone and waited for (concurrency 1); latency runs from the send to the
// moment the last byte of the answer is in (a streamed answer: its end).
//
//   1. Round trip: `execute {code: "return 1"}` against `tools/call echo` in the same
//      session, alternating call by call (which goes first alternates too).
//   2. Memory: this process's RSS with --paused executions paused for approval (spread over
//      50 sessions), against the same server idle and warm. A paused execution is a stored
//      record and journal, not an isolate, so the engine workers' RSS is shown alongside.
//   3. Resume from cold: executions that made 20 `tally` calls and paused at
//      `counter_increment` (an approval tool; the sessions' client has no elicitation), each
//      resumed with accept: the journal is replayed in a fresh isolate, then the approved
//      call runs. Baseline: a live execution making 20 `tally` calls, alternating with the
//      resumes, in the same sessions.
//
// Every answer is checked (status, value, the tally and counter a session should have): a
// wrong one ends the benchmark with the answer printed. Nothing here is asserted about
// time; the numbers go to docs/benchmarks.md.
#include "execute_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_stats.hpp"
#include "dorm/actors/code_mode.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "session_client.hpp"

namespace dorm::bench {
namespace {

using namespace execute;  // SessionClient, the answer checks, the JSON helpers
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Sessions the paused executions of the memory figure are spread over.
constexpr int kMemorySessions = 50;
// Sessions the resumes and their live baseline run in.
constexpr int kResumeSessions = 10;
// Calls of each subject before any measurement (JIT, caches, the allocator's arenas).
constexpr int kWarmupCalls = 50;
// Paused and approval windows far beyond any run: no session leaves memory by its idle
// alarm and no approval times out while the benchmark measures.
constexpr std::chrono::hours kNoExpiry{24};

const std::string kTrivial = "return 1";
// The memory figure's paused execution: one tool call, then a pause for approval.
const std::string kPauseAfterOne =
    "await tools.tally({}); return await tools.counter_increment({})";
// A 20-call journal and a pause; resumed with accept, it returns [last tally, counter].
const std::string kPauseAfterTwenty =
    "let t = 0; for (let i = 0; i < 20; i++) t = await tools.tally({}); "
    "const c = await tools.counter_increment({}); return [t, c];";
// The same 20 calls, live to the end.
const std::string kLiveTwenty =
    "let t = 0; for (let i = 0; i < 20; i++) t = await tools.tally({}); return t;";

// ---- the sessions of a part, with what their counters must be ----

struct BenchSession {
  std::string id;
  long tally = 0;    // the session's "tally" counter: real runs of tally
  long counter = 0;  // its "counter": approved counter_increment runs
};

std::vector<BenchSession> open_sessions(SessionClient& client, const char* prefix, int n) {
  std::vector<BenchSession> out;
  for (int i = 0; i < n; ++i) {
    char id[64];
    std::snprintf(id, sizeof id, "s-bench-%s-%04d", prefix, i);
    out.push_back({id});
    client.initialize(id);
  }
  return out;
}

// A kPauseAfterTwenty execution, paused.
struct PausedTwenty {
  std::string id;
  long tally = 0;  // the last tally it saw: the journal keeps it across the resume
};

PausedTwenty pause_twenty(SessionClient& client, BenchSession& s) {
  std::string id = expect_paused(client.execute(s.id, kPauseAfterTwenty),
                                 "execute (20 tally calls, then pause)");
  s.tally += 20;
  return {id, s.tally};
}

// Resumes `p` in `s` with accept: it must return [its tally, the session's next counter].
Reply resume_twenty(SessionClient& client, BenchSession& s, const PausedTwenty& p,
                    const char* what) {
  Reply r = client.resume_accept(s.id, p.id);
  ++s.counter;
  expect_completed(r, pair_json(p.tally, s.counter), what);
  return r;
}

// Reads both counters through code and compares them with what the benchmark counted: a
// replay that ran a tool again, or a lost call, shows here.
void check_counters(SessionClient& client, const BenchSession& s) {
  std::string expected = pair_json(s.tally, s.counter);
  expect_completed(
      client.execute(
          s.id, "return [await tools.counter_get({name: 'tally'}), await tools.counter_get({})]"),
      expected, "the counters after the run");
}

// ---- memory ----

struct MemoryReading {
  double self_mib = 0;       // this process (after malloc_trim)
  double workers_mib = 0;    // the engine workers together
  std::size_t workers = 0;   // how many: a retiring worker stays while it runs anything
  double memtables_mib = 0;  // RocksDB's memtables (part of self)
};

MemoryReading read_memory(engine::Pool& pool, storage::RocksDbBackend& backend) {
  MemoryReading m;
  m.self_mib = resident_bytes() / (1024.0 * 1024.0);  // malloc_trim(0) first
  for (pid_t pid : pool.worker_pids()) {
    m.workers_mib += static_cast<double>(process_rss_kib(pid)) / 1024.0;
    ++m.workers;
  }
  std::uint64_t memtables = 0;
  backend.db().GetIntProperty("rocksdb.cur-size-all-mem-tables", &memtables);
  m.memtables_mib = static_cast<double>(memtables) / (1024.0 * 1024.0);
  return m;
}

std::string with_commas(long n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// ---- the server under test ----

// Code mode in a threaded runtime over RocksDB, set up as `dorm serve` does. The members
// are declared in the order they must outlive each other: the runtime stops first.
struct CodeModeServer {
  std::unique_ptr<storage::RocksDbBackend> backend;
  std::unique_ptr<engine::Pool> pool;
  mcp::ToolRegistry tools;
  actors::McpSessionOptions session_options;
  actors::CodeModeOptions code_mode;
  std::unique_ptr<Runtime> runtime;
};

// Fills `s` in place (its options point into it).
void start_server(CodeModeServer& s, const fs::path& db_dir, unsigned cores) {
  s.backend = must(storage::RocksDbBackend::open(db_dir.string(), storage::Durability::process),
                   "open RocksDB");
  engine::PoolOptions pool_options;  // dorm serve's defaults: a worker per core, 4 slots each
  pool_options.worker_path = engine::default_worker_path();
  pool_options.workers = 0;
  pool_options.slots_per_worker = 4;
  if (pool_options.worker_path.empty())
    fail("dorm-engine-worker was not found next to dorm or in ../engine");
  s.pool = must(engine::Pool::create(pool_options), "engine pool");
  must(actors::register_fixtures(s.tools, "testing"), "testing fixtures");
  s.session_options.tools = &s.tools;
  s.session_options.idle.idle_after = kNoExpiry;
  s.code_mode.pool = s.pool.get();
  s.code_mode.approval_timeout = kNoExpiry;
  must(actors::enable_code_mode(s.tools, s.session_options, s.code_mode), "code mode");
  RuntimeOptions runtime_options;  // as dorm serve: at least 4 CAF workers
  runtime_options.workers = std::max(4u, cores);
  s.runtime = must(Runtime::start(*s.backend, runtime_options), "runtime");
  must(actors::register_mcp_session(*s.runtime, s.session_options), "session namespace");
}

// ---- warm-up: every path once in a while, in a session of its own ----

void warm_up(SessionClient& client) {
  auto warm = open_sessions(client, "warm", 1);
  for (int i = 0; i < kWarmupCalls; ++i) {
    expect_completed(client.execute(warm[0].id, kTrivial), "1", "warm-up execute");
    expect_echo(client.call_tool(warm[0].id, "echo", R"({"text":"warm"})"), "warm");
  }
  for (int i = 0; i < 5; ++i) {
    resume_twenty(client, warm[0], pause_twenty(client, warm[0]), "warm-up resume");
  }
  check_counters(client, warm[0]);
}

// ---- 2. memory: first, while the server is otherwise fresh ----

struct MemoryFigure {
  MemoryReading idle, held;
  double pause_seconds = 0;
};

MemoryFigure measure_memory(SessionClient& client, CodeModeServer& server, int paused) {
  MemoryFigure m;
  auto sessions = open_sessions(client, "memory", std::min(kMemorySessions, paused));
  // Each session runs every path once before the idle reading, so what follows is the
  // paused executions and nothing a session costs anyway.
  for (auto& s : sessions) {
    expect_completed(client.execute(s.id, kLiveTwenty), std::to_string(s.tally + 20),
                     "memory warm-up execute");
    s.tally += 20;
    resume_twenty(client, s, pause_twenty(client, s), "memory warm-up resume");
  }
  // Each reading follows a quiet spell longer than the pool's idle trim, so the workers have
  // given back what the runs before it left (PoolOptions::idle_trim).
  const auto settle = engine::PoolOptions{}.idle_trim + std::chrono::seconds(1);
  std::this_thread::sleep_for(settle);
  m.idle = read_memory(*server.pool, *server.backend);
  std::set<std::string> ids;
  auto start = Clock::now();
  for (int i = 0; i < paused; ++i) {
    auto& s = sessions[static_cast<std::size_t>(i) % sessions.size()];
    ids.insert(
        expect_paused(client.execute(s.id, kPauseAfterOne), "execute (1 tally call, then pause)"));
    ++s.tally;
  }
  m.pause_seconds = seconds_since(start);
  if (ids.size() != static_cast<std::size_t>(paused)) fail("paused executions share ids");
  std::this_thread::sleep_for(settle);
  m.held = read_memory(*server.pool, *server.backend);
  for (const auto& s : sessions)
    check_counters(client, s);  // tally ran once each; nothing approved
  std::printf(
      "memory: idle %.1f MiB, with %s paused executions %.1f MiB (+%.1f MiB; paused in %.1f s)\n",
      m.idle.self_mib, with_commas(paused).c_str(), m.held.self_mib,
      m.held.self_mib - m.idle.self_mib, m.pause_seconds);
  std::fflush(stdout);
  return m;
}

// ---- 1 and 3, round by round ----

// Latencies of a subject and of its baseline, in one round, in milliseconds.
struct RoundSample {
  std::vector<double> subject_ms, baseline_ms;
};

// 1. execute `return 1` and tools/call echo, alternating call by call.
RoundSample round_trips(SessionClient& client, const BenchSession& trip, int calls, int round) {
  RoundSample out;
  for (int i = 0; i < calls; ++i) {
    for (int k = 0; k < 2; ++k) {
      if ((i + round + k) % 2 == 0) {
        Reply r = client.execute(trip.id, kTrivial);
        expect_completed(r, "1", "execute `return 1`");
        out.subject_ms.push_back(r.ms);
      } else {
        std::string text = numbered("e", i);
        Reply r = client.call_tool(trip.id, "echo", R"({"text":)" + json_string(text) + "}");
        expect_echo(r, text);
        out.baseline_ms.push_back(r.ms);
      }
    }
  }
  return out;
}

// 3. Pause `calls` executions (not timed), then resume each, alternating with a live
// execution of the same 20 calls in the same session.
RoundSample resumes_against_live(SessionClient& client, std::vector<BenchSession>& resumers,
                                 int calls, int round) {
  std::vector<PausedTwenty> paused;
  for (int i = 0; i < calls; ++i) {
    paused.push_back(pause_twenty(client, resumers[static_cast<std::size_t>(i) % resumers.size()]));
  }
  RoundSample out;
  for (int i = 0; i < calls; ++i) {
    auto& s = resumers[static_cast<std::size_t>(i) % resumers.size()];
    for (int k = 0; k < 2; ++k) {
      if ((i + round + k) % 2 == 0) {
        Reply r = resume_twenty(client, s, paused[static_cast<std::size_t>(i)],
                                "resume (20-call journal, then the approved call)");
        out.subject_ms.push_back(r.ms);
      } else {
        Reply r = client.execute(s.id, kLiveTwenty);
        s.tally += 20;
        expect_completed(r, std::to_string(s.tally), "execute (20 tally calls, live)");
        out.baseline_ms.push_back(r.ms);
      }
    }
  }
  for (const auto& s : resumers) check_counters(client, s);
  return out;
}

// Each round's p50 and p99 of a subject and of its baseline, and their ratios.
struct Comparison {
  std::vector<double> p50, p99, baseline_p50, baseline_p99, ratio50, ratio99;

  void add(const RoundSample& round) {
    p50.push_back(percentile(round.subject_ms, 50));
    p99.push_back(percentile(round.subject_ms, 99));
    baseline_p50.push_back(percentile(round.baseline_ms, 50));
    baseline_p99.push_back(percentile(round.baseline_ms, 99));
    ratio50.push_back(p50.back() / baseline_p50.back());
    ratio99.push_back(p99.back() / baseline_p99.back());
  }
};

void print_round(int round, int rounds, const Comparison& trips, const Comparison& resumes) {
  std::printf(
      "round %d/%d: execute p50 %.3f p99 %.3f ms, tools/call p50 %.3f p99 %.3f ms (p50 ratio "
      "%.2f); "
      "resume p50 %.3f p99 %.3f ms, live p50 %.3f p99 %.3f ms (p50 ratio %.2f)\n",
      round, rounds, trips.p50.back(), trips.p99.back(), trips.baseline_p50.back(),
      trips.baseline_p99.back(), trips.ratio50.back(), resumes.p50.back(), resumes.p99.back(),
      resumes.baseline_p50.back(), resumes.baseline_p99.back(), resumes.ratio50.back());
  std::fflush(stdout);
}

// Ratios are the medians of the rounds' own ratios: both subjects of a round ran
// interleaved, under the same load.
void print_latency_table(const Comparison& trips, const Comparison& resumes) {
  std::printf("\n| row | p50 ms | p99 ms |\n|---|---:|---:|\n");
  std::printf("| tools/call echo (baseline) | %.3f | %.3f |\n", median(trips.baseline_p50),
              median(trips.baseline_p99));
  std::printf("| execute `return 1` | %.3f | %.3f |\n", median(trips.p50), median(trips.p99));
  std::printf("| ratio execute / tools/call (target p50 <= 3) | %.2f | %.2f |\n",
              median(trips.ratio50), median(trips.ratio99));
  std::printf("| execute, 20 tally calls, live (baseline) | %.3f | %.3f |\n",
              median(resumes.baseline_p50), median(resumes.baseline_p99));
  std::printf(
      "| resume from cold: replay of 20 journaled calls, then the approved call | %.3f | %.3f |\n",
      median(resumes.p50), median(resumes.p99));
  std::printf("| ratio resume / live | %.2f | %.2f |\n", median(resumes.ratio50),
              median(resumes.ratio99));
}

void print_memory_table(const MemoryFigure& m, int paused, const std::string& load_after) {
  const MemoryReading& idle = m.idle;
  const MemoryReading& held = m.held;
  std::string paused_count = with_commas(paused);
  std::printf(
      "\n| memory (RSS after malloc_trim(0), one reading each) | idle, warm | %s paused | above "
      "idle |\n"
      "|---|---:|---:|---:|\n",
      paused_count.c_str());
  std::printf("| this process, MiB (target above idle <= 64) | %.1f | %.1f | %+.1f |\n",
              idle.self_mib, held.self_mib, held.self_mib - idle.self_mib);
  std::printf("| RocksDB memtables (inside this process), MiB | %.1f | %.1f | %+.1f |\n",
              idle.memtables_mib, held.memtables_mib, held.memtables_mib - idle.memtables_mib);
  std::printf("| engine workers together, MiB (how many) | %.1f (%zu) | %.1f (%zu) | %+.1f |\n",
              idle.workers_mib, idle.workers, held.workers_mib, held.workers,
              held.workers_mib - idle.workers_mib);
  std::printf(
      "(%.1f KiB of this process per paused execution; %s paused over %d sessions in %.1f s; "
      "load average at the end %s)\n",
      (held.self_mib - idle.self_mib) * 1024.0 / paused, paused_count.c_str(),
      std::min(kMemorySessions, paused), m.pause_seconds, load_after.c_str());
}

}  // namespace

int run_execute_bench(const ExecuteBenchOptions& o) {
  if (o.rounds < 1 || o.calls < 1 || o.paused < 1)
    fail("--rounds, --calls and --paused must be at least 1");
  bool temporary = o.dir.empty();
  fs::path root = temporary ? fs::temp_directory_path() / numbered("dorm-bench-execute-", getpid())
                            : fs::path(o.dir);
  fs::path db_dir = root / "execute";
  fs::remove_all(db_dir);
  fs::create_directories(db_dir);
  unsigned cores = std::thread::hardware_concurrency();
  std::printf(
      "dorm bench execute: %d rounds, %d sequential calls per subject and round, %d paused "
      "executions; "
      "%u cores, load average %s; data in %s\n",
      o.rounds, o.calls, o.paused, cores, load_average().c_str(), db_dir.c_str());
  std::fflush(stdout);

  CodeModeServer server;
  start_server(server, db_dir, cores);
  SessionClient client(*server.runtime);
  warm_up(client);
  MemoryFigure memory = measure_memory(client, server, o.paused);

  auto trip = open_sessions(client, "trip", 1);
  auto resumers = open_sessions(client, "resume", kResumeSessions);
  Comparison trips, resumes;  // execute against tools/call; resume against live
  for (int round = 1; round <= o.rounds; ++round) {
    trips.add(round_trips(client, trip[0], o.calls, round));
    resumes.add(resumes_against_live(client, resumers, o.calls, round));
    print_round(round, o.rounds, trips, resumes);
  }
  std::string load_after = load_average();
  server.runtime->shutdown();
  print_latency_table(trips, resumes);
  print_memory_table(memory, o.paused, load_after);

  server.runtime.reset();
  server.pool.reset();
  server.backend.reset();
  if (temporary) {
    fs::remove_all(root);
  } else {
    fs::remove_all(db_dir);
  }
  return 0;
}

}  // namespace dorm::bench
