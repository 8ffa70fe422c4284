// Polling for an answer before sleeping for it.
//
// A slot waiting for a tool result, and the pool thread waiting for the next frame of a
// lone execution, often get their answer within tens of microseconds: a tool the host
// answers at once, code that calls tools one after another. Sleeping for it costs a
// sleep and a wake-up in each of two processes, measured at 20-70 µs each on this
// project's 2-core virtual machine — more than the answer itself. A waiter that polls its
// sockets for a short while first takes the answer without sleeping (100 sequential tool
// calls: ~5 ms sleeping on every wait, ~2-3 ms polling first; docs/benchmarks.md).
//
// Polling spends CPU, so the policy allows it only where it is cheap and likely to pay:
//  - only for a lone waiter: the slot is the only busy one in its worker, the pool runs
//    one execution; with more running, the CPU is better left to them;
//  - a waiter whose poll missed (the answer came later: a slow tool, a person) polls
//    again only every kProbeEvery-th wait, until a poll hits again, so slow answers cost
//    at most one budget per kProbeEvery waits.
// Time a slot spends polling counts as its execution's CPU time (at most the budget per
// tool call).
#pragma once

#include <poll.h>

#include <chrono>

namespace dorm::engine {

class PollBeforeSleep {
 public:
  // 50 µs: a little above the round trip it is meant to catch (slot -> pool -> slot,
  // 20-40 µs when neither side sleeps), so a hit costs less than a wake-up would.
  static constexpr std::chrono::microseconds kDefaultBudget{50};
  // A budget above this would spend more CPU polling than a sleep and a wake-up cost.
  static constexpr std::chrono::microseconds kMaxBudget{10'000};
  static constexpr unsigned kProbeEvery = 8;
  // 200 µs: what Pool::start() polls for a lone execution's outcome by default
  // (PoolOptions::start_polls_for_outcome): a trivial execution's round trip through an
  // idle slot, ~0.1 ms here, with room for a slower machine.
  static constexpr std::chrono::microseconds kDefaultStartBudget{200};

  // A zero budget turns polling off.
  explicit PollBeforeSleep(std::chrono::microseconds budget = kDefaultBudget) : budget_(budget) {}

  // How long the next wait may poll before it sleeps: zero unless `lone_waiter`, and zero
  // on the waits skipped after a miss.
  std::chrono::microseconds next(bool lone_waiter);

  // What the poll allowed by the last nonzero next() came to: the answer arrived while
  // polling, or not.
  void record(bool answered);

 private:
  std::chrono::microseconds budget_;
  bool backing_off_ = false;
  unsigned waits_since_probe_ = 0;
};

// poll(2) with a zero timeout, repeated until a descriptor is ready or `budget` has
// passed. Returns what the last poll returned (> 0: ready; 0: nothing within the budget;
// < 0: an error, errno set). With `yield`, each empty poll is followed by sched_yield():
// the answer may come from a thread queued on this very CPU (a write to a Unix socket
// wakes its reader on the writer's CPU), which a spinning waiter would keep waiting. A
// slot waiting for a tool result yields: the pool thread that brings it was often queued
// behind it. The pool thread yields only while the execution it waits for calls tools (the
// slot and the pool thread then share a CPU, each woken by the other's writes); waiting for
// an outcome it does not, since a yield can hand its CPU to a slot making its next context
// (~0.3 ms of CPU) while the outcome is due (docs/benchmarks.md, "Starting on the caller's
// thread" and "Polling for the outcome at start; yielding while code calls tools").
int poll_briefly(pollfd* fds, nfds_t count, std::chrono::microseconds budget, bool yield);

}  // namespace dorm::engine
