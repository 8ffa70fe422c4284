// What a `dorm torture` run counted, and the table (text) or object (JSON) it prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dorm::torture {

struct TortureTotals {
  // The run as asked for.
  std::uint64_t seed = 0;
  std::string storage;  // the URI template
  int lanes = 0;        // concurrent sessions (--sessions)
  int cycles_planned = 0;
  std::int64_t retry_ms = 0;  // R: the servers' retry hint, the clients' reconnect delay

  // What it did.
  int cycles = 0;                       // kills followed by a restart and a check
  std::size_t sessions = 0;             // sessions opened, the first `lanes` and the new ones
  std::size_t sessions_not_opened = 0;  // new sessions a kill interrupted
  std::size_t calls = 0;    // tool calls of the workload (the checks' reads not counted)
  std::size_t appends = 0;  // ledger_append calls among them
  std::size_t acked = 0;    // appends answered with a result
  // Appends a kill found in flight, and how many of them were acknowledged all the same
  // (the result was stored before the kill and came on the resumed stream).
  std::size_t appends_hit = 0;
  std::size_t appends_hit_acked = 0;
  // Unacknowledged appends, as the check after their kill found them: stored (the work
  // ran; the reaper's error said the outcome was unknown) or not.
  std::size_t unacked_stored = 0;
  std::size_t unacked_absent = 0;
  std::size_t unacked_stored_after_error = 0;  // of unacked_stored: the call got an error
  std::size_t errors = 0;  // calls that ended with an error response or a failed POST
  std::size_t reaped = 0;  // errors from the reaper (-32001, server_restart or session_reset)
  // Errors of calls no kill was near (a dropped connection's POST, say): not a violation.
  std::size_t errors_without_kill = 0;
  std::map<std::string, std::size_t> errors_without_kill_reasons;  // by Outcome::reason

  // The checks; any of these above zero fails the run.
  std::size_t lost = 0;
  std::size_t duplicated = 0;
  std::size_t reappeared = 0;
  std::size_t foreign = 0;
  std::size_t hung = 0;
  std::size_t sessions_lost = 0;

  // From a kill to each error it caused (the calls a kill hit that ended with an error).
  std::optional<std::int64_t> error_ms_p50;
  std::optional<std::int64_t> error_ms_p99;
  std::optional<std::int64_t> error_ms_max;
  // From each kill to its successor's ready line.
  std::optional<std::int64_t> restart_ms_p50;
  std::optional<std::int64_t> restart_ms_max;
  double wall_s = 0;

  // The first violations, one line each ("cycle 12, session s-…: token … lost").
  std::vector<std::string> findings;
  // Set when the run stopped before its last cycle: why (a server that did not turn ready,
  // the time limit).
  std::string stopped;

  bool violated() const {
    return lost + duplicated + reappeared + foreign + hung + sessions_lost > 0;
  }
};

// How many findings a report lists (the counts cover them all).
inline constexpr std::size_t kMaxFindings = 20;

std::string format_text(const TortureTotals& totals);
// One JSON object: cycles, calls, acked, lost, duplicated, hung, sessions_lost, error_ms_p99
// (null without errors), seed, and the other counts above.
std::string format_json(const TortureTotals& totals);

}  // namespace dorm::torture
