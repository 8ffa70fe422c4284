// dorm::Clock — where durable time comes from.
//
// Every durable time (alarm due times, last activity, retention deadlines) is wall-clock
// Unix milliseconds read from an injected Clock, never from CAF's actor clock: CAF's clock
// is monotonic and starts again with each actor system, so it cannot order events across
// a restart. CAF timers are armed with `due - clock.now_ms()`. Tests inject a
// VirtualClock, which outlives runtime restarts and moves only when the test moves it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace dorm {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch. Thread-safe.
  virtual std::int64_t now_ms() const = 0;
};

// The operating system's wall clock (std::chrono::system_clock).
class SystemClock final : public Clock {
 public:
  std::int64_t now_ms() const override;
};

// A clock that moves only when advance() is called. Each runtime built on it subscribes,
// and advance() moves every subscriber's CAF test coordinator by the same amount, so CAF
// timers and durable times stay in step. Not for use with foreign threads: virtual-time
// tests are single-threaded (CAF's test coordinator is not thread-safe).
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(std::int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}

  std::int64_t now_ms() const override { return now_; }

  // Moves time forward by `ms` (>= 0) and tells every subscriber, in subscription order.
  void advance(std::int64_t ms);

  // `on_advance(ms)` runs on every advance() until the returned token is passed to
  // unsubscribe(). Subscribers are told in order of `rank`, then of subscription (a
  // Cluster ranks its nodes by index, so a restarted node keeps its place).
  using Subscription = std::uint64_t;
  Subscription subscribe(std::function<void(std::int64_t)> on_advance, int rank = 0);
  void unsubscribe(Subscription token);

 private:
  std::int64_t now_;
  Subscription next_ = 1;
  std::map<std::pair<int, Subscription>, std::function<void(std::int64_t)>> subscribers_;
};

}  // namespace dorm
