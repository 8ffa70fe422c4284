// SpaceReport: what the server's storage watcher does after each look, on a made-up
// clock (the watcher itself runs in tests/e2e/disk_full.test.mjs).
#include <doctest/doctest.h>

#include "storage_watch.hpp"

using dorm::server::SpaceReport;
using Action = SpaceReport::Action;

TEST_CASE("space report: says full at once, then at most every 10 s, and says when it clears") {
  SpaceReport report;
  const std::int64_t every = SpaceReport::kLogInterval.count();
  CHECK(report.observe(false, 0) == Action::none);
  CHECK(report.observe(true, 1'000) == Action::became_full);
  CHECK(report.full_for(1'000) == 0);
  // Looks once a second while full: quiet until the interval has passed.
  for (std::int64_t t = 2'000; t < 1'000 + every; t += 1'000) {
    CAPTURE(t);
    CHECK(report.observe(true, t) == Action::none);
  }
  CHECK(report.unlogged() == 9);
  CHECK(report.observe(true, 1'000 + every) == Action::still_full_log);
  CHECK(report.full_for(1'000 + every) == every);
  CHECK(report.observe(true, 2'000 + every) == Action::none);
  CHECK(report.observe(false, 3'000 + every) == Action::recovered);
  CHECK(report.full_for(3'000 + every) == 0);
  CHECK(report.observe(false, 4'000 + every) == Action::none);
  // Full again later: said at once again.
  CHECK(report.observe(true, 5'000 + every) == Action::became_full);
}
