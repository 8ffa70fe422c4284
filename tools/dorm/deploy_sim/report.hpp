// The table `dorm deploy-sim` prints: one row per variant, mode, retry hint and restart
// gap, as aligned text, Markdown, or one JSON object for scripts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outcome.hpp"

namespace dorm::deploy_sim {

// What produced the rows: printed above the text and Markdown tables, and as members of
// the JSON object beside `rows`.
struct ReportHeader {
  std::string version;
  std::uint64_t seed = 0;
  int sessions = 0;
  int calls_per_session = 0;
  int deploys = 0;
  std::int64_t call_ms_min = 0;
  std::int64_t call_ms_max = 0;
  double client_timeout_s = 0;
  double drain_timeout_s = 0;
  bool virtual_time = false;  // --virtual: McpCluster on virtual time, no port to probe
  int nodes = 1;              // servers running side by side over one store (--nodes)
  std::string storage = "rocksdb";  // the store's kind: rocksdb, postgres, memory (virtual)
};

std::string format_text(const ReportHeader& header, const std::vector<RowSummary>& rows);
std::string format_markdown(const ReportHeader& header, const std::vector<RowSummary>& rows);
// {"version", "seed", ..., "virtual", "rows": [{"variant", "mode", "retry_ms",
// "restart_gap_ms", "calls", "answered", "failed_fast", "hung", "error_ms_p50",
// "error_ms_p99", "reasons": {"server_restart": n, "server_draining": n, ...},
// "unanswered_ms_max", "unanswered_probes"}]}; the percentiles are null when no call
// failed, the unanswered_* on virtual time.
std::string format_json(const ReportHeader& header, const std::vector<RowSummary>& rows);

}  // namespace dorm::deploy_sim
