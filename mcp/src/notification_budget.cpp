#include "dorm/mcp/notification_budget.hpp"

#include <algorithm>

namespace dorm::mcp {

namespace {
constexpr std::int64_t kOne = 1000;  // one notification, in the bucket's unit
}  // namespace

NotificationBudget::NotificationBudget(NotificationLimits limits)
    : limits_(limits), millis_(std::max<std::int64_t>(limits.burst, 0) * kOne) {}

bool NotificationBudget::take(std::int64_t now_ms) {
  const std::int64_t capacity = std::max<std::int64_t>(limits_.burst, 0) * kOne;
  if (last_ms_ >= 0 && now_ms > last_ms_) {
    // per_second notifications per 1,000 ms is per_second thousandths per millisecond.
    // Capped before multiplying, so an idle hour cannot overflow.
    const std::int64_t elapsed = std::min<std::int64_t>(now_ms - last_ms_, capacity + kOne);
    millis_ = std::min(capacity, millis_ + elapsed * std::max<std::int64_t>(limits_.per_second, 0));
  }
  if (last_ms_ < 0 || now_ms > last_ms_) last_ms_ = now_ms;
  if (millis_ < kOne) {
    ++dropped_;
    return false;
  }
  millis_ -= kOne;
  ++sent_;
  return true;
}

}  // namespace dorm::mcp
