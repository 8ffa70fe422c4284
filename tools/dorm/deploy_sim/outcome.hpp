// What one simulated deploy run recorded, and the table row it sums up to.
//
// A run ("row") is one server variant under one deploy mode, one retry hint and one
// restart gap. It goes through rounds: in each, every session starts its calls, the
// deploy comes once the server has accepted all of them, and the round ends when every
// call has its outcome (a result, an error, or its client's timeout). Times are
// milliseconds since the row started, on the steady clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client_rules.hpp"

namespace dorm::deploy_sim {

// Which server a row runs, and how it is deployed.
struct RowKey {
  std::string variant;  // no-fix, priming-only, reaper
  std::string mode;     // kill, term, rolling
  std::int64_t retry_ms = 500;
  std::int64_t restart_gap_ms = 0;
};

struct CallRecord {
  int session = 0;
  int slot = 0;                  // which of the session's concurrent calls
  int round = 0;                 // which deploy it was exposed to, from 0
  std::int64_t duration_ms = 0;  // how long the tool was asked to run
  double start_ms = 0;           // the POST was sent
  double end_ms = 0;             // the outcome arrived (hung: the client's timeout fired)
  double deploy_ms = 0;          // its round's deploy instant
  Outcome outcome;

  // From the deploy to the outcome (negative if the call ended before the deploy).
  double after_deploy_ms() const { return end_ms - deploy_ms; }
};

// Everything a row produced: the table row is computed from it, the timeline drawn.
struct RowRun {
  RowKey key;
  int sessions = 0;
  int calls_per_session = 0;
  std::vector<CallRecord> calls;
  std::vector<double> deploys_ms;  // when each deploy began (SIGKILL or SIGTERM sent)
  double end_ms = 0;               // when the last outcome arrived
  // Longest stretch, over the row's deploys, in which no server on the port answered an
  // HTTP request (/readyz probes every kReadyzProbeMs): the window a new client is refused.
  double unanswered_ms_max = 0;
  // Probes that got no HTTP answer at all (refused, reset, or silent for 5 s).
  int unanswered_probes = 0;
};

struct RowSummary {
  RowKey key;
  int calls = 0;
  int answered = 0;
  int failed_fast = 0;
  int hung = 0;
  // From the deploy to the error, over the failed calls; unset when none failed.
  std::optional<double> error_ms_p50;
  std::optional<double> error_ms_p99;
  std::map<std::string, int> reasons;  // failed calls by reason
  double unanswered_ms_max = 0;
  int unanswered_probes = 0;
};

// Nearest-rank percentile (q in [0, 1]) of `values`; unset for no values.
std::optional<double> percentile(std::vector<double> values, double q);

RowSummary summarize(const RowRun& run);

}  // namespace dorm::deploy_sim
