// Alarms: durable, named wake-ups for durable objects, delivered at least once.
//
// An object may hold several named alarms (the unnamed one is the default, as in the
// Durable Objects API). Setting or deleting one is part of the turn's batch, so a failed
// turn leaves alarms as they were. Each alarm is two records committed together: the
// object's own record (due time and version) and an entry in the runtime index
// "dorm.alarms", keyed by due time, which the AlarmScheduler reads in order without
// activating anything.
//
// Delivery runs on_alarm() in a turn. The alarm is cleared when that turn commits, and
// only the delivered version: a handler that sets the same alarm again keeps the new
// time. A failed delivery is retried (attempts 2-7 after 2, 4, 8, 16, 32, 64 s, each
// +-25 % from the runtime's seeded RNG); when attempt 7 fails, on_alarm_exhausted() runs
// and the alarm is deleted in that turn's batch. After a restart, alarms that came due
// while the runtime was down are released at RuntimeOptions::overdue_alarm_rate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dorm {

struct AlarmInfo {
  std::string name;          // "" for the default alarm
  int attempt = 1;           // 1 for the first delivery, up to kMaxAlarmAttempts
  std::int64_t scheduled_ms = 0;  // the due time the alarm was set for
  std::int64_t actual_ms = 0;     // when this delivery runs (the runtime's clock)
};

inline constexpr int kMaxAlarmAttempts = 7;

// The retry delay after failed attempt `attempt` (1..6), before jitter: 2^attempt seconds.
inline std::int64_t alarm_retry_base_ms(int attempt) { return std::int64_t{1000} << attempt; }

}  // namespace dorm
