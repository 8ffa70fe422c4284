// AlarmScheduler — delivers alarms in due order, one CAF timer at a time.
//
// The scheduler holds the earliest entries of the "dorm.alarms" index in memory (an
// AlarmWindow, at most RuntimeOptions::alarm_window of them) and arms a single CAF timer
// for the earliest thing it will have to do next: the window's first entry, a retry, the
// next overdue release, or the window's horizon (where its knowledge of the index ends).
// Each timer carries a version, so a timer made stale by re-arming is ignored. Objects
// tell it every alarm change they commit (AlarmChanged: each index entry put, with its
// version, or deleted), so a set, a move or a delete costs O(log n) in memory and no store
// access; changes that make something due at once are coalesced into one pending tick.
// The store is read only when the horizon comes due: at start (the window is empty), and
// when the window has delivered everything it held before the rest of the index is due.
// Reading from a cursor on every change instead made each re-arm step over the deleted
// entries of all re-arms since the last compaction: O(n) per change, O(n^2) under load.
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
#include "alarm_window.hpp"
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
    bool elsewhere = false;  // scale-out: put off because another node held the object
  };
  struct Retry {
    Delivery delivery;
    std::int64_t at_ms;
  };
  // What one pass over the window found: when to look again, and whether the window ran
  // out of due entries (only then may the store hold more that are due).
  struct Pass {
    std::optional<std::int64_t> next;
    bool exhausted = true;
  };

  void tick();
  Pass deliver_due(std::int64_t now);
  // Reads the next page of the index, from the window's horizon, into the window.
  enum class Read { ok, failed, fenced };
  Read refill();
  void changed(const AlarmChanged& c);
  void done(const AlarmDone& d);
  void deliver(const std::string& index_key, Delivery d);
  // Delivers what was held back for namespace `ns`, now registered.
  void release_held(const std::string& ns);
  void arm(std::optional<std::int64_t> at_ms);
  // A tick as soon as the mailbox allows, once however often it is asked for.
  void tick_soon();
  std::int64_t jittered_delay_ms(int failed_attempt);
  // Whether the alarm index still holds `index_key` at `version` (read from the store).
  bool still_stored(const std::string& index_key, const std::string& version);
  // True if the alarm with this version was set by an earlier runtime over this store.
  bool set_before_start(std::string_view version) const;
  // Stores how many alarms are due and not handed out (RuntimeStats::alarms_late): those
  // the window holds that are due and not in flight, and those waiting for a retry.
  void publish_late(std::int64_t now);

  Runtime* runtime_;
  Runtime::Impl* impl_;
  AlarmWindow window_;  // entries neither in flight nor waiting for a retry (mostly)
  std::map<std::string, Delivery> inflight_;
  std::map<std::string, Retry> retries_;
  // Due alarms of namespaces not registered yet, by namespace: a program registers its
  // namespaces after Runtime::start, and the alarms due at the start must not fail their
  // first attempt meanwhile. At most the window's capacity are held; beyond that they go
  // out and fail as before, so an unregistered namespace cannot stall the index.
  std::map<std::string, std::vector<std::pair<std::string, Delivery>>, std::less<>> held_;
  std::size_t held_count_ = 0;
  std::int64_t released_overdue_ = 0;
  std::uint64_t timer_version_ = 0;
  std::optional<std::int64_t> armed_ms_;
  bool tick_pending_ = false;
  std::mt19937_64 rng_;
};

}  // namespace dorm::detail
