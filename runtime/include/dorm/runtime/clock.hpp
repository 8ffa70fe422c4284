// dorm::Clock — where durable time comes from.
//
// Every durable time (alarm due times, last activity, retention deadlines) is wall-clock
// Unix milliseconds read from an injected Clock, never from CAF's actor clock: CAF's clock
// is monotonic and starts again with each actor system, so it cannot order events across
// a restart. CAF timers are armed with `due - clock.now_ms()`. Tests inject a virtual
// clock that outlives runtime restarts.
#pragma once

#include <cstdint>

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

}  // namespace dorm
