// What one row of `dorm deploy-sim` runs, whichever way it runs: real `dorm serve`
// processes (simulation.hpp) or McpCluster on virtual time (virtual_simulation.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "outcome.hpp"
#include "workload.hpp"

namespace dorm::deploy_sim {

struct RowPlan {
  RowKey key;
  int sessions = 50;
  int calls_per_session = 2;
  const Workload* workload = nullptr;  // its rounds are the row's deploys
  double client_timeout_s = 120;
  double drain_timeout_s = 30;
  // Real processes only:
  std::string dorm;           // the `dorm` executable to serve with
  std::filesystem::path dir;  // the row's RocksDB store goes under it (when `storage` is empty)
  // The row's store as a storage URI (deploy-sim empties it before the row); empty: a
  // RocksDB store under `dir`.
  std::string storage;
  // More than one: that many `dorm serve` nodes (--node-id) share `storage`, a PostgreSQL
  // store opened with shared=true; session i's client talks to node i % nodes.
  int nodes = 1;
  // The nodes' --lease-ms (0: the server's default); they renew every quarter of it.
  std::int64_t lease_ms = 0;
  // Starts every node id of the row, so that no two rows or runs share one.
  std::string node_prefix;
};

// The tool every call runs: the `sleep` fixture of `dorm serve --fixtures testing`.
inline constexpr const char* kCallTool = "sleep";
// Its arguments for a call that runs `duration_ms`.
std::string call_arguments(std::int64_t duration_ms);

// Round `round`'s calls, session by session and slot by slot, with their places and
// durations (the workload's) filled in; their records are the runner's to fill.
std::vector<SimCall> round_calls(const RowPlan& plan, int round);

}  // namespace dorm::deploy_sim
