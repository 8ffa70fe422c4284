// What one simulated deploy run recorded, and the table row it sums up to.
//
// A run ("row") is one server variant under one deploy mode, one retry hint and one
// restart gap. It goes through rounds: in each, every session starts its calls, the
// deploy comes once the server has accepted all of them, and the round ends when every
// call has its outcome (a result, an error, or its client's timeout). Each call's outcome
// is a testing::CallRecord, the one McpCluster fills on virtual time, so both ways of
// running a row sum up through testing::summarize. Times are milliseconds since the row
// started: on the steady clock for real processes, on the virtual clock for --virtual.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dorm/testing/call_outcome.hpp"

namespace dorm::deploy_sim {

// Which server a row runs, and how it is deployed.
struct RowKey {
  std::string variant;  // no-fix, priming-only, reaper
  std::string mode;     // kill, term, rolling
  std::int64_t retry_ms = 500;
  std::int64_t restart_gap_ms = 0;
};

// One call of a row: its place in the workload, and what its client saw.
struct SimCall {
  int session = 0;               // the session's index (its lane on the timeline)
  int slot = 0;                  // which of the session's concurrent calls
  int round = 0;                 // which deploy it was exposed to, from 0
  std::int64_t duration_ms = 0;  // how long the tool was asked to run
  // Times since the row started; deploy_ms is set when the round's deploy found the call
  // without its outcome.
  testing::CallRecord record;
};

// Everything a row produced: the table row is computed from it, the timeline drawn.
struct RowRun {
  RowKey key;
  int sessions = 0;
  int calls_per_session = 0;
  std::vector<SimCall> calls;
  std::vector<std::int64_t> deploys_ms;  // when each deploy began (SIGKILL or SIGTERM sent)
  std::int64_t end_ms = 0;               // when the last outcome arrived
  // Longest stretch, over the row's deploys, in which no server on the port answered an
  // HTTP request (/readyz probes every kReadyzProbeMs): the window a new client is refused.
  // Unset on virtual time, where there is no port to probe.
  std::optional<double> unanswered_ms_max;
  // Probes that got no HTTP answer at all (refused, reset, or silent for 5 s); unset on
  // virtual time.
  std::optional<int> unanswered_probes;
};

struct RowSummary {
  RowKey key;
  testing::OutcomeSummary outcomes;  // failed calls are the table's "failed fast"
  std::optional<double> unanswered_ms_max;
  std::optional<int> unanswered_probes;
};

RowSummary summarize(const RowRun& run);

// When the row's last outcome arrived or its last deploy began, whichever is later.
std::int64_t last_event_ms(const RowRun& run);

}  // namespace dorm::deploy_sim
