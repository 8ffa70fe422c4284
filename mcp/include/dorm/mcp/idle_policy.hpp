// IdlePolicy — when an idle MCP session leaves memory (docs/architecture.md#idle-sessions).
//
// Every client request stores the session's last activity, and sets its idle alarm to
// last activity + `idle_after` when none is due by then (an earlier alarm finds the activity
// and waits, row 1); alarm deliveries and reaping are not activity. When the alarm
// fires, decide() says what to do, evaluating these rows in order with
// idle = now - last activity:
//
//   1. idle < idle_after                          → wait until last activity + idle_after
//   2. paused work and idle < paused_limit        → wait min(step, paused_limit - idle)
//   3. paused work                                → dispose
//   4. busy (running requests or open streams)
//      and idle < busy_limit                      → wait min(step, busy_limit - idle)
//   5. otherwise                                  → dispose
//
// A wait is never shorter than min_wait, so a clock at the boundary cannot make the alarm
// fire in a loop. Disposing frees the session's memory and keeps its storage. Paused work
// (an execution waiting for approval) is a plain input, so the policy needs no engine.
// A pure function: no clock, no storage.
#pragma once

#include <chrono>
#include <cstdint>

namespace dorm::mcp {

struct IdlePolicy {
  std::chrono::milliseconds idle_after{5 * 60 * 1000};
  std::chrono::milliseconds paused_limit{9 * 60 * 1000};
  std::chrono::milliseconds busy_limit{35 * 60 * 1000};
  std::chrono::milliseconds step{4 * 60 * 1000};
  std::chrono::milliseconds min_wait{1};
};

struct IdleInput {
  std::int64_t now_ms = 0;
  std::int64_t last_activity_ms = 0;
  bool paused_work = false;  // an execution waits for approval
  bool busy = false;         // requests running or streams open
};

struct IdleDecision {
  enum class Action { wait, dispose };
  Action action = Action::wait;
  std::int64_t wake_at_ms = 0;  // for wait: when to evaluate again
  int row = 0;                  // which row of the table decided (1-5), for logs and tests

  friend bool operator==(const IdleDecision&, const IdleDecision&) = default;
};

IdleDecision decide(const IdlePolicy& policy, const IdleInput& input);

}  // namespace dorm::mcp
