// The parts of `dorm bench runtime`, each in its own file; runtime_bench.cpp runs them and
// prints the tables. Each returns one value per round; the tables show medians.
#pragma once

#include <caf/atom.hpp>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"
#include "runtime_bench.hpp"

namespace dorm::bench {

using ping_atom = caf::atom_constant<caf::atom("ping")>;

template <class T>
T must(Result<T> r) {
  if (!r) throw std::runtime_error(r.error().describe());
  return std::move(r).value();
}
inline void must(Result<void> r) {
  if (!r) throw std::runtime_error(r.error().describe());
}

// `prefix` followed by `n`. (Built in two steps: `"x" + std::to_string(n)` trips GCC 12's
// false -Wrestrict in release builds.)
inline std::string numbered(const char* prefix, long n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// A runtime over `backend` with `workers` CAF worker threads and otherwise default options.
inline std::unique_ptr<Runtime> start_runtime(storage::Backend& backend, int workers) {
  RuntimeOptions ro;
  ro.workers = static_cast<std::size_t>(workers);
  return must(Runtime::start(backend, ro));
}

// ---- round trips and idle memory (runtime_bench.cpp) ----
struct RoundTripRow {
  int objects = 0;
  std::vector<double> raw;  // round trips per second, one per round
  std::vector<double> dorm;
};
std::vector<RoundTripRow> bench_round_trips(const RuntimeBenchOptions& options);

struct IdleMemory {
  std::vector<double> bare_kib;   // KiB of RSS per idle object, one per round
  std::vector<double> dorm_kib;   // objects that read their state in on_start
  std::vector<double> quiet_kib;  // objects that read nothing
};
IdleMemory bench_idle_memory(const RuntimeBenchOptions& options);

// ---- idle MCP sessions (idle_session_bench.cpp) ----
struct IdleSessions {
  std::vector<double> cached_kib;    // KiB of RSS per idle session, one per round
  std::vector<double> uncached_kib;  // the same with no storage cache
};
IdleSessions bench_idle_sessions(const RuntimeBenchOptions& options);
void print_idle_sessions(const IdleSessions& sessions, const RuntimeBenchOptions& options);

// ---- cold activation (cold_activation_bench.cpp) ----
struct ColdActivation {
  std::vector<double> dorm_p50, dorm_p99;  // ms, one per round
  std::vector<double> warm_p50, warm_p99;  // a second request to the same objects
  std::vector<double> raw_p50, raw_p99;    // 3 raw RocksDB gets of the same keys
  double fill_seconds = 0;
};
ColdActivation bench_cold_activation(const RuntimeBenchOptions& options,
                                     const std::filesystem::path& dir);

// ---- alarms (alarm_bench.cpp) ----
struct AlarmFigures {
  int pending = 0;                               // alarms stored and pending throughout
  int firing = 0;                                // alarms that come due in each round's window
  double set_seconds = 0;                        // storing the pending alarms, once
  std::vector<double> open_ms, empty_open_ms;    // RocksDB open, with the alarms / empty store
  std::vector<double> armed_ms, empty_armed_ms;  // Runtime::start -> first timer armed
  std::vector<double> start_ms, empty_start_ms;  // Runtime::start -> returned
  std::size_t index_entries_read = 0;            // by the scheduler at its first start tick
  // Starting again after the lateness rounds delivered `delivered` alarms.
  int delivered = 0;
  std::vector<double> delivered_open_ms, delivered_armed_ms, delivered_start_ms;
  std::vector<double> late_p50, late_p99, late_max;           // ms (AlarmInfo), one per round
  std::vector<double> late_p50_us, late_p99_us, late_max_us;  // the same, to the microsecond
  std::vector<double> window_scans;  // alarm index scans while the round's alarms came due
};
AlarmFigures bench_alarms(const RuntimeBenchOptions& options, const std::filesystem::path& dir);

// ---- the object storage cache (storage_cache_bench.cpp) ----
struct StorageCacheFigures {
  // Listing a prefix under write/delete churn: one value per round.
  std::vector<double> churn_cached_turns_s, churn_uncached_turns_s;
  std::vector<double> churn_cached_last_us, churn_uncached_last_us;  // the last slice
  double churn_cached_scans = 0, churn_uncached_scans = 0;           // per turn, last round
  // tools/call echo, one at a time.
  std::vector<double> call_cached_p50_ms, call_uncached_p50_ms;
  std::vector<double> call_cached_cpu_us, call_uncached_cpu_us;  // process CPU per call
  struct PerCall {
    // Backend calls (and operations committed) per tools/call, last round.
    double commits = 0, ops = 0, reads = 0, scans = 0;
  };
  PerCall call_cached, call_uncached;
};
StorageCacheFigures bench_storage_cache(const RuntimeBenchOptions& options,
                                        const std::filesystem::path& dir);
void print_storage_cache(const StorageCacheFigures& figures);

// ---- alarm re-arms (rearm_bench.cpp) ----
struct RearmRow {
  int requests = 0;                 // re-arms (or puts) per measurement
  std::vector<double> rearm_per_s;  // one per round
  std::vector<double> put_per_s;    // the baseline: the same turns writing a key instead
  std::uint64_t scans = 0;          // alarm index scans during the last round's re-arms
};
std::vector<RearmRow> bench_rearms(const RuntimeBenchOptions& options,
                                   const std::filesystem::path& dir);

}  // namespace dorm::bench
