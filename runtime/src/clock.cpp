#include "dorm/runtime/clock.hpp"

#include <chrono>

namespace dorm {

std::int64_t SystemClock::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void VirtualClock::advance(std::int64_t ms) {
  if (ms <= 0) return;
  now_ += ms;
  // Copy: a subscriber may subscribe or unsubscribe while being told.
  auto subscribers = subscribers_;
  for (auto& [token, fn] : subscribers) fn(ms);
}

VirtualClock::Subscription VirtualClock::subscribe(std::function<void(std::int64_t)> on_advance) {
  Subscription token = next_++;
  subscribers_.emplace(token, std::move(on_advance));
  return token;
}

void VirtualClock::unsubscribe(Subscription token) { subscribers_.erase(token); }

}  // namespace dorm
