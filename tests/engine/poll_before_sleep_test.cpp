// The policy for polling before sleeping (engine/include/dorm/engine/poll_before_sleep.hpp):
// when a waiter may poll, and how it backs off after polls that found nothing.
#include "dorm/engine/poll_before_sleep.hpp"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

using dorm::engine::PollBeforeSleep;
using namespace std::chrono_literals;

TEST_CASE("poll_before_sleep: only a lone waiter polls, for the configured budget") {
  PollBeforeSleep policy(40us);
  CHECK(policy.next(false) == 0us);
  CHECK(policy.next(true) == 40us);
  policy.record(true);
  CHECK(policy.next(true) == 40us);
  CHECK(policy.next(false) == 0us);
  CHECK(PollBeforeSleep().next(true) == PollBeforeSleep::kDefaultBudget);
}

TEST_CASE("poll_before_sleep: a zero budget never polls") {
  PollBeforeSleep off(0us);
  for (int i = 0; i < 3 * static_cast<int>(PollBeforeSleep::kProbeEvery); ++i) CHECK(off.next(true) == 0us);
}

TEST_CASE("poll_before_sleep: after a miss it polls only every kProbeEvery-th wait, until a poll hits") {
  PollBeforeSleep policy(50us);
  REQUIRE(policy.next(true) == 50us);
  policy.record(false);
  for (int round = 0; round < 3; ++round) {
    for (unsigned i = 1; i < PollBeforeSleep::kProbeEvery; ++i) CHECK(policy.next(true) == 0us);
    CHECK(policy.next(true) == 50us);  // the probe
    policy.record(false);
  }
  // Waits that were not lone do not count towards the next probe.
  for (unsigned i = 1; i < PollBeforeSleep::kProbeEvery; ++i) {
    CHECK(policy.next(false) == 0us);
    CHECK(policy.next(true) == 0us);
  }
  CHECK(policy.next(true) == 50us);
  policy.record(true);  // a hit ends the back-off
  for (int i = 0; i < 5; ++i) CHECK(policy.next(true) == 50us);
}

TEST_CASE("poll_briefly: reports a readable or closed socket, and nothing when there is nothing") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  pollfd p{fds[0], POLLIN, 0};
  CHECK(dorm::engine::poll_briefly(&p, 1, 200us, false) == 0);
  CHECK(dorm::engine::poll_briefly(&p, 1, 200us, true) == 0);
  CHECK(p.revents == 0);
  REQUIRE(::write(fds[1], "x", 1) == 1);
  CHECK(dorm::engine::poll_briefly(&p, 1, 200us, false) == 1);
  CHECK(dorm::engine::poll_briefly(&p, 1, 200us, true) == 1);
  CHECK((p.revents & POLLIN) != 0);
  char byte;
  REQUIRE(::read(fds[0], &byte, 1) == 1);
  ::close(fds[1]);
  CHECK(dorm::engine::poll_briefly(&p, 1, 200us, false) == 1);
  CHECK(dorm::engine::poll_briefly(&p, 1, 200us, true) == 1);
  CHECK((p.revents & POLLHUP) != 0);
  ::close(fds[0]);
}
