#include "dorm/mcp/notification_budget.hpp"

#include <doctest/doctest.h>

using dorm::mcp::NotificationBudget;
using dorm::mcp::NotificationLimits;

TEST_CASE("notification budget: a burst passes at once, the next one is dropped") {
  NotificationBudget budget(NotificationLimits{.burst = 5, .per_second = 10});
  for (int i = 0; i < 5; ++i) CHECK(budget.take(1000));
  CHECK_FALSE(budget.take(1000));
  CHECK(budget.sent() == 5);
  CHECK(budget.dropped() == 1);
}

TEST_CASE("notification budget: after the burst, per_second on average") {
  NotificationBudget budget(NotificationLimits{.burst = 2, .per_second = 10});
  CHECK(budget.take(0));
  CHECK(budget.take(0));
  // 10 a second is one per 100 ms: 99 ms earn nothing whole, 100 ms earn one.
  CHECK_FALSE(budget.take(99));
  CHECK(budget.take(100));
  CHECK_FALSE(budget.take(150));
  // A tool that reports every millisecond for 10 s gets about 100 through, not 10,000.
  int passed = 0;
  for (std::int64_t t = 1000; t < 11000; ++t) passed += budget.take(t) ? 1 : 0;
  CHECK(passed >= 99);
  CHECK(passed <= 102);
}

TEST_CASE("notification budget: a quiet spell refills to the burst, never past it") {
  NotificationBudget budget(NotificationLimits{.burst = 3, .per_second = 50});
  for (int i = 0; i < 3; ++i) CHECK(budget.take(0));
  CHECK_FALSE(budget.take(0));
  // An hour later: three at once again, not 180,000.
  const std::int64_t later = 3'600'000;
  for (int i = 0; i < 3; ++i) CHECK(budget.take(later));
  CHECK_FALSE(budget.take(later));
}

TEST_CASE("notification budget: a clock that goes back earns nothing") {
  NotificationBudget budget(NotificationLimits{.burst = 1, .per_second = 1000});
  CHECK(budget.take(5000));
  CHECK_FALSE(budget.take(4000));
  CHECK_FALSE(budget.take(5000));
  CHECK(budget.take(5001));
}

TEST_CASE("notification budget: the defaults let a 64-notification report through whole") {
  NotificationBudget budget;
  for (int i = 0; i < 64; ++i) CHECK(budget.take(i * 5));
  CHECK(budget.dropped() == 0);
}
