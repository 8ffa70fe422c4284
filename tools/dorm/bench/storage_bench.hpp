// `dorm bench storage`: the storage layer against raw RocksDB (see storage_bench.cpp).
#pragma once

#include <filesystem>
#include <string>

namespace dorm::bench {

struct StorageBenchOptions {
  std::string dir;   // working directory for the databases (a temp dir when empty)
  int rounds = 5;    // interleaved rounds; each figure is the median over them
  // Per row, subject and round: ops / batch (at least 1,000) commits for put rows, ops
  // gets, ops / 10 scans, ops / 20 commits for fsync rows.
  int ops = 20000;
  bool fsync_rows = true;
  bool open_after_kill = true;
  bool backend_rows = true;   // the backends against raw RocksDB
  bool settings_rows = true;  // candidate RocksDB settings (storage_settings_bench.cpp)
  // A postgres:// URI (without table=): adds the PostgreSQL table, dorm's backend against
  // the same statements over plain libpq, on tables dorm_bench_raw and dorm_bench_dorm.
  std::string postgres;
};

int run_storage_bench(const StorageBenchOptions& options);

// The settings table: RocksDbBackend::make_options with and without candidate settings,
// under write/delete churn, databases under `root`, `rounds` interleaved rounds.
void run_storage_settings_bench(const std::filesystem::path& root, int rounds);

// Hidden helper for the open-after-kill measurement: fills the memtable of the RocksDB
// store in `dir` without flushing, prints "filled", then waits to be killed.
int storage_bench_fill_and_wait(const std::string& dir);

}  // namespace dorm::bench
