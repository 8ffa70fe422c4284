#include "dorm/engine/poll_before_sleep.hpp"

#include <sched.h>

#include <cerrno>

namespace dorm::engine {

std::chrono::microseconds PollBeforeSleep::next(bool lone_waiter) {
  if (budget_.count() <= 0 || !lone_waiter) return std::chrono::microseconds::zero();
  if (backing_off_ && ++waits_since_probe_ < kProbeEvery) return std::chrono::microseconds::zero();
  waits_since_probe_ = 0;
  return budget_;
}

void PollBeforeSleep::record(bool answered) {
  backing_off_ = !answered;
  waits_since_probe_ = 0;
}

int poll_briefly(pollfd* fds, nfds_t count, std::chrono::microseconds budget, bool yield) {
  const auto until = std::chrono::steady_clock::now() + budget;
  for (;;) {
    int ready = ::poll(fds, count, 0);
    if (ready > 0 || (ready < 0 && errno != EINTR)) return ready;
    if (std::chrono::steady_clock::now() >= until) return 0;
    if (yield) sched_yield();
  }
}

}  // namespace dorm::engine
