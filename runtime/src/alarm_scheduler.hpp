// AlarmScheduler — delivers alarms in due order, one CAF timer at a time.
//
// The scheduler keeps no copy of the alarm index. It reads the "dorm.alarms" index from a
// cursor, delivers every entry that is due, and arms a single CAF timer for the earliest
// thing it will have to do next (the next entry, a retry, or the next overdue release);
// each timer carries a version, so a timer made stale by re-arming is ignored. It holds in
// memory only what is in flight and what waits for a retry. Objects tell it when they
// commit an alarm set (with its due time); a set that is not yet due only moves the timer
// earlier, so re-arming costs O(log n) in the store's index and no scan.
//
// At start it reads only the index: an object is activated only when one of its alarms
// is due. Alarms that came due while no runtime ran (set by an earlier runtime, due before
// this one started) are released at `overdue_alarm_rate` per second, so a restart after
// a long outage does not activate every such object at once.
#pragma once

#include <caf/event_based_actor.hpp>

#include <map>
#include <optional>
#include <random>
#include <string>

#include "alarm_records.hpp"
#include "runtime_impl.hpp"

namespace dorm::detail {

class AlarmScheduler : public caf::event_based_actor {
 public:
  AlarmScheduler(caf::actor_config& cfg, Runtime* runtime, Runtime::Impl* impl);
  caf::behavior make_behavior() override;
  const char* name() const override { return "dorm.alarm-scheduler"; }

 private:
  struct Delivery {
    AlarmIndexKey key;
    std::string version;
    int attempt = 1;
    bool exhausted = false;
  };
  struct Retry {
    Delivery delivery;
    std::int64_t at_ms;
  };

  void tick();
  void changed(const AlarmChanged& c);
  void done(const AlarmDone& d);
  void deliver(const std::string& index_key, Delivery d);
  void arm(std::optional<std::int64_t> at_ms);
  std::int64_t jittered_delay_ms(int failed_attempt);
  // True if the alarm with this version was set by an earlier runtime over this store.
  bool set_before_start(std::string_view version) const;

  Runtime* runtime_;
  Runtime::Impl* impl_;
  std::string cursor_;  // index keys before it were delivered or are waiting for a retry
  std::map<std::string, Delivery> inflight_;
  std::map<std::string, Retry> retries_;
  std::int64_t released_overdue_ = 0;
  std::uint64_t timer_version_ = 0;
  std::optional<std::int64_t> armed_ms_;
  std::mt19937_64 rng_;
};

}  // namespace dorm::detail
