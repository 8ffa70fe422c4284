// `dorm bench runtime --part storage-cache`: what the object storage cache saves.
//
// 1. Listing under churn. One object per subject lists a prefix whose keys its earlier
//    turns wrote and deleted (the MCP session's pattern: a call writes a key, listings
//    follow, a later call deletes it). Each iteration is two turns: `put s/<i>` and a
//    listing of s/, then `del s/<i>` and a listing. Subjects: the default cache and none
//    (storage_cache_bytes 0), two namespaces of one runtime over one RocksDB store,
//    alternating in slices; fresh objects each round. Reported: turns per second, the
//    last slice's microseconds per turn (the uncached listing walks every tombstone since
//    the last flush, so it grows), and backend scans per turn.
// 2. tools/call of the `echo` fixture in an MCP session, one call at a time through
//    SessionClient (as the HTTP endpoint calls a session, without HTTP), cached and
//    uncached sessions in two runtimes over two RocksDB stores, alternating in slices:
//    p50 latency, the process's CPU time per call (every thread: the session's turn, the
//    store, the waiting client), and per call the backend commits, the operations in those batches,
//    reads (gets and scans) and scans, counted by a FaultyBackend with no faults planned
//    and a wrapper that counts batch operations.
#include <caf/atom.hpp>
#include <time.h>

#include <atomic>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_stats.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/storage/faulty_backend.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "runtime_bench_parts.hpp"
#include "session_client.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using churn_atom = caf::atom_constant<caf::atom("churn")>;

constexpr int kChurnSlices = 20;
constexpr int kChurnSliceIterations = 500;  // 10,000 iterations per object and round
constexpr int kCallSlices = 20;
constexpr int kCallsPerSlice = 100;
constexpr int kWarmupCalls = 50;

// Writes or deletes one key under s/, then lists s/; returns how many keys it listed.
class Churner : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {[this](churn_atom, int i, bool add) -> int {
      auto key = numbered("s/", i);
      if (add) {
        must(put(key, "v"));
      } else {
        must(del(key));
      }
      ListOptions o;
      o.prefix = "s/";
      return static_cast<int>(must(list(o)).size());
    }};
  }
};

// One turn, waited for; fails the benchmark on a wrong answer.
void churn_turn(Runtime& runtime, const ObjectHandle& h, int i, bool add) {
  std::promise<int> replied;
  auto reply = replied.get_future();
  runtime.request(
      h,
      [&replied](caf::expected<caf::message> r) {
        replied.set_value(r && r->match_elements<int>() ? r->get_as<int>(0) : -1);
      },
      churn_atom::value, i, add);
  if (reply.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    give_up_waiting("a churning object did not answer");
  }
  if (reply.get() != (add ? 1 : 0)) throw std::runtime_error("a churn listing saw the wrong keys");
}

struct ChurnSubject {
  ObjectHandle handle;
  double seconds = 0;
  double last_slice_seconds = 0;
  std::uint64_t scans = 0;
  int next = 0;
};

void churn_slice(Runtime& runtime, storage::FaultyBackend& counted, ChurnSubject& s) {
  auto scans = counted.counters().scans;
  auto start = Clock::now();
  for (int k = 0; k < kChurnSliceIterations; ++k, ++s.next) {
    churn_turn(runtime, s.handle, s.next, true);
    churn_turn(runtime, s.handle, s.next, false);
  }
  s.last_slice_seconds = seconds_since(start);
  s.seconds += s.last_slice_seconds;
  s.scans += counted.counters().scans - scans;
}

void bench_churn(const RuntimeBenchOptions& o, const fs::path& dir, StorageCacheFigures& out) {
  auto rocks = must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
  storage::FaultyBackend counted(*rocks);
  auto runtime = start_runtime(counted, o.workers);
  must(runtime->register_namespace("cached", [] { return std::make_unique<Churner>(); }));
  NamespaceOptions off;
  off.storage_cache_bytes = 0;
  must(runtime->register_namespace("uncached", [] { return std::make_unique<Churner>(); }, off));
  constexpr double kTurns = 2.0 * kChurnSlices * kChurnSliceIterations;
  for (int round = 1; round <= o.rounds; ++round) {
    ChurnSubject cached{must(runtime->get(runtime->id_from_name("cached", numbered("r", round))))};
    ChurnSubject plain{must(runtime->get(runtime->id_from_name("uncached", numbered("r", round))))};
    for (int slice = 0; slice < kChurnSlices; ++slice) {
      // Which subject goes first alternates.
      auto* first = slice % 2 ? &plain : &cached;
      auto* second = slice % 2 ? &cached : &plain;
      churn_slice(*runtime, counted, *first);
      churn_slice(*runtime, counted, *second);
    }
    out.churn_cached_turns_s.push_back(kTurns / cached.seconds);
    out.churn_uncached_turns_s.push_back(kTurns / plain.seconds);
    constexpr double kSliceTurns = 2.0 * kChurnSliceIterations;
    out.churn_cached_last_us.push_back(cached.last_slice_seconds * 1e6 / kSliceTurns);
    out.churn_uncached_last_us.push_back(plain.last_slice_seconds * 1e6 / kSliceTurns);
    out.churn_cached_scans = static_cast<double>(cached.scans) / kTurns;
    out.churn_uncached_scans = static_cast<double>(plain.scans) / kTurns;
    std::printf("storage cache, churn round %d/%d: cached %.0f turns/s, uncached %.0f turns/s\n",
                round, o.rounds, out.churn_cached_turns_s.back(), out.churn_uncached_turns_s.back());
    std::fflush(stdout);
  }
  runtime->shutdown();
}

// Counts the operations of the batches committed through it.
class OpCounter : public storage::BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  Result<void> commit(const storage::WriteBatch& batch) override {
    ops.fetch_add(batch.size());
    return BackendWrapper::commit(batch);
  }
  std::atomic<std::uint64_t> ops{0};
};

// An MCP server in process: sessions with the testing fixtures, over a counted store.
struct CallServer {
  std::unique_ptr<storage::RocksDbBackend> rocks;
  std::unique_ptr<OpCounter> ops;
  std::unique_ptr<storage::FaultyBackend> counted;
  mcp::ToolRegistry tools;
  actors::McpSessionOptions options;
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<execute::SessionClient> client;
  std::vector<double> ms;
  storage::FaultyBackend::Counters used;  // over the measured calls
  std::uint64_t ops_used = 0;             // batch operations committed by them
  double cpu_us = 0;                      // process CPU time spent in them
};

void start_call_server(CallServer& s, const fs::path& dir, std::size_t cache_bytes, int workers) {
  fs::create_directories(dir);
  s.rocks = must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
  s.ops = std::make_unique<OpCounter>(*s.rocks);
  s.counted = std::make_unique<storage::FaultyBackend>(*s.ops);
  must(actors::register_fixtures(s.tools, "testing"));
  s.options.tools = &s.tools;
  s.options.storage_cache_bytes = cache_bytes;
  s.runtime = start_runtime(*s.counted, workers);
  must(actors::register_mcp_session(*s.runtime, s.options));
  s.client = std::make_unique<execute::SessionClient>(*s.runtime);
}

// CPU time of the whole process (every thread), in microseconds.
double process_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

void call_slice(CallServer& s, const std::string& session) {
  auto before = s.counted->counters();
  auto ops = s.ops->ops.load();
  double cpu = process_cpu_us();
  for (int k = 0; k < kCallsPerSlice; ++k) {
    auto r = s.client->call_tool(session, "echo", R"({"text":"hi"})");
    execute::expect_echo(r, "hi");
    s.ms.push_back(r.ms);
  }
  auto after = s.counted->counters();
  s.used.commits += after.commits - before.commits;
  s.used.reads += after.reads - before.reads;
  s.used.scans += after.scans - before.scans;
  s.ops_used += s.ops->ops.load() - ops;
  s.cpu_us += process_cpu_us() - cpu;
}

void bench_calls(const RuntimeBenchOptions& o, const fs::path& dir, StorageCacheFigures& out) {
  CallServer cached, plain;
  start_call_server(cached, dir / "cached", NamespaceOptions{}.storage_cache_bytes, o.workers);
  start_call_server(plain, dir / "uncached", 0, o.workers);
  constexpr double kCalls = double{kCallSlices} * kCallsPerSlice;
  for (int round = 1; round <= o.rounds; ++round) {
    std::string session = numbered("s-cache-bench-", round);
    for (auto* s : {&cached, &plain}) {
      s->client->initialize(session);
      for (int k = 0; k < kWarmupCalls; ++k) s->client->call_tool(session, "echo", R"({"text":"w"})");
      s->ms.clear();
      s->used = {};
      s->ops_used = 0;
      s->cpu_us = 0;
    }
    for (int slice = 0; slice < kCallSlices; ++slice) {
      call_slice(slice % 2 ? plain : cached, session);
      call_slice(slice % 2 ? cached : plain, session);
    }
    out.call_cached_p50_ms.push_back(percentile(cached.ms, 50));
    out.call_uncached_p50_ms.push_back(percentile(plain.ms, 50));
    out.call_cached_cpu_us.push_back(cached.cpu_us / kCalls);
    out.call_uncached_cpu_us.push_back(plain.cpu_us / kCalls);
    for (auto [s, f] : {std::pair{&cached, &out.call_cached}, std::pair{&plain, &out.call_uncached}}) {
      f->commits = static_cast<double>(s->used.commits) / kCalls;
      f->reads = static_cast<double>(s->used.reads) / kCalls;
      f->scans = static_cast<double>(s->used.scans) / kCalls;
      f->ops = static_cast<double>(s->ops_used) / kCalls;
    }
    std::printf("storage cache, echo round %d/%d: p50 cached %.3f ms, uncached %.3f ms\n", round,
                o.rounds, out.call_cached_p50_ms.back(), out.call_uncached_p50_ms.back());
    std::fflush(stdout);
  }
  for (auto* s : {&cached, &plain}) s->runtime->shutdown();
}

}  // namespace

StorageCacheFigures bench_storage_cache(const RuntimeBenchOptions& o, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  StorageCacheFigures out;
  bench_churn(o, dir / "churn", out);
  bench_calls(o, dir / "calls", out);
  fs::remove_all(dir);
  return out;
}

void print_storage_cache(const StorageCacheFigures& f) {
  auto ratio = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> r;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) r.push_back(a[i] / b[i]);
    return median(r);
  };
  std::printf("\n| row | unit | cached | uncached | cached / uncached |\n|---|---|---:|---:|---:|\n");
  std::printf("| list a prefix under write/delete churn, %d iterations | turns/s | %.0f | %.0f | %.2f |\n",
              kChurnSlices * kChurnSliceIterations, median(f.churn_cached_turns_s),
              median(f.churn_uncached_turns_s), ratio(f.churn_cached_turns_s, f.churn_uncached_turns_s));
  std::printf("| the same, last %d iterations | us/turn | %.1f | %.1f | %.2f |\n", kChurnSliceIterations,
              median(f.churn_cached_last_us), median(f.churn_uncached_last_us),
              ratio(f.churn_cached_last_us, f.churn_uncached_last_us));
  std::printf("| the same: backend scans | per turn | %.3f | %.3f | |\n", f.churn_cached_scans,
              f.churn_uncached_scans);
  std::printf("| tools/call echo, one at a time, p50 | ms | %.3f | %.3f | %.2f |\n",
              median(f.call_cached_p50_ms), median(f.call_uncached_p50_ms),
              ratio(f.call_cached_p50_ms, f.call_uncached_p50_ms));
  std::printf("| tools/call echo: process CPU time | us/call | %.1f | %.1f | %.2f |\n",
              median(f.call_cached_cpu_us), median(f.call_uncached_cpu_us),
              ratio(f.call_cached_cpu_us, f.call_uncached_cpu_us));
  for (auto [name, cached, plain] :
       {std::tuple{"commits", f.call_cached.commits, f.call_uncached.commits},
        std::tuple{"operations in its batches", f.call_cached.ops, f.call_uncached.ops},
        std::tuple{"backend reads (gets and scans)", f.call_cached.reads, f.call_uncached.reads},
        std::tuple{"backend scans", f.call_cached.scans, f.call_uncached.scans}}) {
    std::printf("| tools/call echo: %s | per call | %.2f | %.2f | |\n", name, cached, plain);
  }
}

}  // namespace dorm::bench
