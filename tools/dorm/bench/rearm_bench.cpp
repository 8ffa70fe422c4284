// `dorm bench runtime`, alarm re-arms: does moving an alarm cost the same at the
// 100,000th re-arm as at the 10,000th?
//
// Issue 22's profile: every MCP request moved its session's idle alarm (a delete and a put
// in the alarm index), and every move made the alarm scheduler read the index from a
// cursor sitting on deleted entries, so each move stepped over the deleted entries of all
// moves since the last compaction: O(n) per move. This part measures that shape directly.
//
// Each round opens a fresh RocksDB store, and 1,000 objects each set one alarm due a day
// from now (not timed). Then N requests (N = 10,000, then 100,000), K in flight, each to
// object i mod 1,000, move that object's alarm to a later time (the idle alarm's shape).
// Baseline, interleaved in the same round over its own fresh store: the same requests
// each put one key instead (a turn that writes as much, with no alarm). The time runs
// from the first request until Runtime::shutdown returns, so the scheduler's own work on
// the re-arms counts even when it lags behind the objects' replies. Flat means the
// re-arms/s at 100,000 match those at 10,000, and the ratio to the baseline holds. A
// Backend decorator counts the scheduler's reads of the alarm index meanwhile.
#include <chrono>
#include <cstdio>

#include "alarm_scan_count.hpp"
#include "bench_stats.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "request_pipeline.hpp"
#include "runtime_bench_parts.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;

constexpr int kObjects = 1000;
constexpr std::int64_t kDayMs = 24 * 3600 * 1000;

using rearm_atom = caf::atom_constant<caf::atom("rearm")>;
using put_atom = caf::atom_constant<caf::atom("put")>;

// rearm(due): moves its one alarm to `due`. put(n): stores n under one key.
class RearmedObject : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {
        [this](rearm_atom, std::int64_t due_ms) {
          must(set_alarm("idle", due_ms));
          return 0;
        },
        [this](put_atom, std::int64_t n) {
          must(put("last", std::to_string(n)));
          return 0;
        },
    };
  }
  void on_alarm(const AlarmInfo&) override {
    throw std::runtime_error("a re-armed alarm fired: they are all a day out");
  }
};

struct Run {
  double per_second;
  std::uint64_t scans;
};

// One measurement over a fresh store at `dir`: `requests` re-arms (or puts, for the
// baseline) spread over kObjects objects.
Run run_once(const RuntimeBenchOptions& o, const fs::path& dir, int requests, bool rearm) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto backend = must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
  AlarmScanCount counted(*backend);
  auto runtime = start_runtime(counted, o.workers);
  must(runtime->register_namespace("rearmed", [] { return std::make_unique<RearmedObject>(); }));
  std::vector<ObjectHandle> handles;
  for (int i = 0; i < kObjects; ++i) {
    handles.push_back(must(runtime->get(runtime->id_from_name("rearmed", numbered("r", i)))));
  }
  const std::int64_t base = runtime->clock().now_ms() + kDayMs;
  auto handle_of = [&](int i) { return handles[static_cast<std::size_t>(i % kObjects)]; };
  // Setup: every object activated with its alarm set (the baseline's objects too, so
  // both measure the same store and resident objects).
  RequestPipeline(*runtime, handle_of,
                  [&](int i) { return caf::make_message(rearm_atom::value, base + i); }, 0,
                  kObjects)
      .run(o.in_flight);
  const std::uint64_t scans_before = counted.scans();
  auto start = std::chrono::steady_clock::now();
  RequestPipeline(
      *runtime, handle_of,
      [&](int i) {
        return rearm ? caf::make_message(rearm_atom::value, base + i)
                     : caf::make_message(put_atom::value, std::int64_t{i});
      },
      kObjects, requests)
      .run(o.in_flight);
  // Until shutdown returns: the scheduler handles a re-arm after the object answered, so
  // work it queued up is only paid for here (issue 22: minutes after SIGTERM).
  runtime->shutdown();
  Run out{requests / seconds_since(start), counted.scans() - scans_before};
  runtime.reset();
  backend.reset();
  fs::remove_all(dir);
  return out;
}

}  // namespace

std::vector<RearmRow> bench_rearms(const RuntimeBenchOptions& o, const fs::path& dir) {
  std::vector<RearmRow> rows;
  for (int requests : {10'000, 100'000}) rows.push_back(RearmRow{requests, {}, {}, 0});
  for (int round = 1; round <= o.rounds; ++round) {
    for (auto& row : rows) {
      Run put = run_once(o, dir, row.requests, false);
      Run rearm = run_once(o, dir, row.requests, true);
      row.put_per_s.push_back(put.per_second);
      row.rearm_per_s.push_back(rearm.per_second);
      row.scans = rearm.scans;
      std::printf(
          "round %d/%d, %d requests over %d objects: %.0f re-arms/s, %.0f puts/s, "
          "%llu alarm index scans\n",
          round, o.rounds, row.requests, kObjects, rearm.per_second, put.per_second,
          static_cast<unsigned long long>(rearm.scans));
      std::fflush(stdout);
    }
  }
  return rows;
}

}  // namespace dorm::bench
