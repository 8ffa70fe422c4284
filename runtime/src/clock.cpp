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
  for (auto& entry : subscribers) entry.second(ms);
}

VirtualClock::Subscription VirtualClock::subscribe(std::function<void(std::int64_t)> on_advance,
                                                   int rank) {
  Subscription token = next_++;
  subscribers_.emplace(std::make_pair(rank, token), std::move(on_advance));
  return token;
}

void VirtualClock::unsubscribe(Subscription token) {
  std::erase_if(subscribers_, [token](const auto& entry) { return entry.first.second == token; });
}

}  // namespace dorm
