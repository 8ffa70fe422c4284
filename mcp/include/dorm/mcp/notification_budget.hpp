// NotificationBudget — how much one request may send besides its answer.
//
// A tool reports progress and log messages on the stream of the call that runs it, and a
// client asks for progress with a token the server repeats in every notification. Without
// bounds, a fast tool and a large token make one request write without end: a 100 KB
// `progressToken` on a tool that reports progress in a loop wrote 200 MB to the stream and
// its event log (issue 23). So:
//
//   - a progress token is at most kMaxProgressTokenBytes (as a request id is, for the same
//     reason: it is copied into every notification and stored with each), else the call is
//     refused with -32602 before it runs;
//   - the notifications of one call pass a token bucket: `burst` at once, then
//     `per_second` on average. One over the budget is dropped, not queued: progress is
//     advisory and grows monotonically, so a client that sees fewer notifications still
//     sees a correct (coarser) picture, and a log message a rate limit drops is the same
//     loss as one a log level filters. The call's result is never dropped.
//
// A pure value: the caller passes the time (the session's clock), so virtual-time tests
// drive it directly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dorm::mcp {

// As kMaxRequestIdBytes: clients send integers or short strings.
inline constexpr std::size_t kMaxProgressTokenBytes = 256;

struct NotificationLimits {
  // Enough for a tool's whole short report at once (the test fixture `flood` sends 64).
  std::int64_t burst = 100;
  // Twenty times what a person can read, far below what fills a stream's event log.
  std::int64_t per_second = 50;
};

class NotificationBudget {
 public:
  explicit NotificationBudget(NotificationLimits limits = {});

  // Whether a notification sent at `now_ms` fits the budget; it is counted if it does,
  // and counted as dropped if it does not. A clock that goes back adds nothing.
  bool take(std::int64_t now_ms);

  std::int64_t sent() const { return sent_; }
  std::int64_t dropped() const { return dropped_; }

 private:
  NotificationLimits limits_;
  // In thousandths of a notification, so a refill of per_second over one millisecond is
  // exact in integers.
  std::int64_t millis_;
  std::int64_t last_ms_ = -1;  // unset until the first take
  std::int64_t sent_ = 0;
  std::int64_t dropped_ = 0;
};

}  // namespace dorm::mcp
