// The idle policy table, row by row and at every boundary.
#include "dorm/mcp/idle_policy.hpp"

#include <doctest/doctest.h>

using namespace dorm::mcp;
using Action = IdleDecision::Action;

namespace {

constexpr std::int64_t kMin = 60 * 1000;
constexpr std::int64_t kT0 = 1'700'000'000'000;

IdleDecision at(std::int64_t idle_ms, bool paused, bool busy, IdlePolicy policy = {}) {
  return decide(policy, IdleInput{kT0 + idle_ms, kT0, paused, busy});
}

}  // namespace

TEST_CASE("idle policy row 1: idle under 5 min waits for the remainder, whatever else holds") {
  for (bool paused : {false, true}) {
    for (bool busy : {false, true}) {
      CAPTURE(paused);
      CAPTURE(busy);
      CHECK(at(0, paused, busy) == IdleDecision{Action::wait, kT0 + 5 * kMin, 1});
      CHECK(at(3 * kMin, paused, busy) == IdleDecision{Action::wait, kT0 + 5 * kMin, 1});
      CHECK(at(5 * kMin - 1, paused, busy) == IdleDecision{Action::wait, kT0 + 5 * kMin, 1});
      CHECK(at(5 * kMin, paused, busy).row != 1);
    }
  }
}

TEST_CASE("idle policy rows 2 and 3: paused work is kept up to 9 min, in steps of at most 4 min") {
  CHECK(at(5 * kMin, true, false) == IdleDecision{Action::wait, kT0 + 9 * kMin, 2});  // min(4, 4)
  CHECK(at(6 * kMin, true, false) == IdleDecision{Action::wait, kT0 + 9 * kMin, 2});  // min(4, 3)
  CHECK(at(9 * kMin - 1, true, true) == IdleDecision{Action::wait, kT0 + 9 * kMin, 2});
  CHECK(at(9 * kMin, true, false) == IdleDecision{Action::dispose, 0, 3});
  // Paused work decides before running work: a busy session with paused work goes at 9 min.
  CHECK(at(9 * kMin, true, true) == IdleDecision{Action::dispose, 0, 3});
  CHECK(at(60 * kMin, true, true) == IdleDecision{Action::dispose, 0, 3});
}

TEST_CASE("idle policy rows 4 and 5: running work is kept up to 35 min in 4 min steps; idle goes at 5 min") {
  CHECK(at(5 * kMin, false, true) == IdleDecision{Action::wait, kT0 + 9 * kMin, 4});
  CHECK(at(30 * kMin, false, true) == IdleDecision{Action::wait, kT0 + 34 * kMin, 4});
  CHECK(at(33 * kMin, false, true) == IdleDecision{Action::wait, kT0 + 35 * kMin, 4});  // min(4, 2)
  CHECK(at(35 * kMin - 1, false, true) == IdleDecision{Action::wait, kT0 + 35 * kMin, 4});
  CHECK(at(35 * kMin, false, true) == IdleDecision{Action::dispose, 0, 5});
  CHECK(at(5 * kMin, false, false) == IdleDecision{Action::dispose, 0, 5});
  CHECK(at(100 * kMin, false, false) == IdleDecision{Action::dispose, 0, 5});
}

TEST_CASE("idle policy: waits are at least min_wait; every number is configurable") {
  IdlePolicy policy;
  policy.idle_after = std::chrono::milliseconds(1000);
  policy.paused_limit = std::chrono::milliseconds(2000);
  policy.busy_limit = std::chrono::milliseconds(3000);
  policy.step = std::chrono::milliseconds(500);
  policy.min_wait = std::chrono::milliseconds(50);
  CHECK(at(999, false, false, policy) == IdleDecision{Action::wait, kT0 + 999 + 50, 1});  // 1 ms left
  CHECK(at(1000, true, false, policy) == IdleDecision{Action::wait, kT0 + 1500, 2});
  CHECK(at(1990, true, false, policy) == IdleDecision{Action::wait, kT0 + 1990 + 50, 2});
  CHECK(at(2000, true, false, policy).action == Action::dispose);
  CHECK(at(2500, false, true, policy) == IdleDecision{Action::wait, kT0 + 3000, 4});
  CHECK(at(3000, false, true, policy).action == Action::dispose);
  // A clock that went backwards (idle < 0) is treated as fresh activity.
  CHECK(decide(IdlePolicy{}, IdleInput{kT0 - 10, kT0, false, false}) ==
        IdleDecision{Action::wait, kT0 + 5 * kMin, 1});
}
