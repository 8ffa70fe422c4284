// What a deploy did to each tool call, as its client saw it, and the table row that
// sums a run up: the incident's table (no fix: hung; priming only: hung; priming and the
// reaper: failed fast with -32001 server_restart) is one such row per server variant.
//
// Only a JSON-RPC response settles a call: a result answers it, an error fails it; a call
// whose POST found no server (refused, or an HTTP error status instead of a stream) fails
// at once too, as the SDK rejects it. A call with neither by its client's timeout hung.
// Times are milliseconds on whichever clock ran the calls (virtual for
// testing::McpCluster), so a run on virtual time and one of real processes fill the same
// records and the same row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dorm::testing {

enum class OutcomeKind {
  pending,   // no outcome yet (the client's timeout has not passed)
  answered,  // a result response
  failed,    // an error response, or the POST itself failed
  hung,      // nothing by the client's timeout
};
std::string_view to_string(OutcomeKind kind);

struct Outcome {
  OutcomeKind kind = OutcomeKind::pending;
  // failed by an error response: its JSON-RPC code (-32001 for the reaper's and the
  // drain's errors); 0 when the POST failed.
  int code = 0;
  // failed: the error's data.reason ("server_restart", "session_reset",
  // "server_draining"), "code N" for an error without one, or why the POST failed
  // ("connection_refused", "http_503").
  std::string reason;
};

// The outcome an error response's `error` member (JSON text) gives its call.
Outcome outcome_of_error(std::string_view error_json);

struct CallRecord {
  std::string session;
  std::size_t node = 0;           // where the session lives
  std::int64_t request_id = 0;    // the JSON-RPC id
  std::string tool;
  std::int64_t start_ms = 0;      // the POST was sent
  std::int64_t end_ms = 0;        // the outcome arrived (hung: the timeout fired)
  // When the first deploy that hit this call began (its node went down or started to
  // drain while the call had no outcome); unset for a call no deploy touched.
  std::optional<std::int64_t> deploy_ms;
  Outcome outcome;

  // From the deploy to the outcome; unset if no deploy touched the call or it is pending.
  std::optional<std::int64_t> after_deploy_ms() const;
};

// One row of the table.
struct OutcomeSummary {
  std::size_t calls = 0;
  std::size_t answered = 0;
  std::size_t failed = 0;
  std::size_t hung = 0;
  std::size_t pending = 0;
  // From the deploy to the error, over the failed calls a deploy touched; unset if none.
  std::optional<std::int64_t> error_ms_p50;
  std::optional<std::int64_t> error_ms_p99;
  std::optional<std::int64_t> error_ms_max;
  std::map<std::string, std::size_t> reasons;  // failed calls by reason
};

OutcomeSummary summarize(const std::vector<CallRecord>& calls);

// Nearest-rank percentile (q in [0, 1]); unset for no values.
std::optional<std::int64_t> percentile(std::vector<std::int64_t> values, double q);

}  // namespace dorm::testing
