// Internals shared by Runtime and ObjectHost. Not installed; not part of the API.
#pragma once

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "alarm_records.hpp"
#include "directory.hpp"
#include "object_cache.hpp"
#include "object_storage.hpp"
#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/fenced_backend.hpp"

namespace dorm::detail {

// A reply to a request an object sent, coming back to run its continuation.
struct ContinuationReply {
  std::uint64_t id;
  caf::expected<caf::message> reply;
};

// A function posted through an Inbox, to run as a turn of its target.
struct PostedTurn {
  std::function<void()> fn;
};

// Where Inbox posts go. Threaded runtimes send each one to its activation at once; on
// virtual time they queue until the test thread delivers them (deliver_queued), since
// CAF's test coordinator must not be touched from another thread.
struct PostBox {
  explicit PostBox(bool deferred) : deferred(deferred) {}
  void post(const caf::actor_addr& target, std::function<void()> fn);
  // Virtual time: sends what is queued; returns how many.
  std::size_t deliver_queued();
  // Virtual time: waits until something is queued or `timeout` passed; whether it is.
  bool wait(std::chrono::milliseconds timeout);
  // Drops every later post (the runtime stopped).
  void close();

  const bool deferred;
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::pair<caf::actor_addr, std::function<void()>>> queued;
  bool closed = false;
};

// The scheduler asks an object to run an alarm (or its exhausted hook).
struct AlarmInvocation {
  std::string name;
  std::string version;  // only this version of the alarm is delivered and cleared
  int attempt = 1;
  std::int64_t scheduled_ms = 0;
  bool exhausted = false;  // run on_alarm_exhausted and delete the alarm
};

// Scheduler-internal: a timer fired (stale if its version is not the current one).
struct AlarmTick {
  std::uint64_t version;
};

// Scheduler-internal: something may be due now (see AlarmScheduler::tick_soon).
struct AlarmDue {};

// An object committed changes to the alarm index, in batch order. `certain` is false when
// the commit reported failure (it may have been applied all the same).
struct AlarmChanged {
  std::vector<AlarmIndexChange> changes;
  bool certain = true;
};

// A namespace was registered: alarms of it held back since the start may go out now.
struct NamespaceAdded {
  std::string ns;
};

// A delivery finished (ok = its turn committed).
struct AlarmDone {
  std::string index_key;
  bool ok;
  // Scale-out: not delivered because another node holds the object, whose lease runs out
  // then (that node delivers it meanwhile); 0 otherwise.
  std::int64_t elsewhere_until = 0;
};

// Asks an activation to stop (runtime shutdown; later also eviction).
struct StopRequest {
  StopReason reason;
};

// Asks an activation to check whether it has been idle long enough to stop.
struct IdleCheck {};

// Scale-out: the lease keeper's period, and its word to an activation whose lease is gone.
struct LeaseTick {};
struct LeaseRetry {};
struct AlarmRescan {};
struct LeaseLost {};
// Runtime::hand_over: stop as soon as idle, releasing the lease.
struct HandOver {};

}  // namespace dorm::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::Envelope)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::StopRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::IdleCheck)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::ContinuationReply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::PostedTurn)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::AlarmInvocation)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::AlarmTick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::AlarmDue)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::AlarmChanged)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::AlarmDone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::NamespaceAdded)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::LeaseTick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::LeaseRetry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::HandOver)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::AlarmRescan)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::detail::LeaseLost)

namespace dorm {

struct Runtime::Impl {
  // Every storage call of this runtime goes through this handle, so that a runtime that
  // dies can be cut off from the store its successor uses (restart simulation).
  const storage::Backend& store;  // what `backend` fences; the key of the runtime's claim
  storage::FencedBackend backend;
  RuntimeOptions options;
  SystemClock system_clock;
  const Clock* clock = nullptr;
  std::optional<IdCodec> ids;
  std::uint64_t generation = 0;
  VirtualClock::Subscription clock_subscription = 0;

  std::unique_ptr<caf::actor_system_config> config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor alarm_scheduler;
  std::int64_t started_ms = 0;  // the runtime's clock at start: alarms due before are overdue

  StartReason start_kind = StartReason::first;  // the default reason for activations

  // Which activation each id has (directory.hpp): a lock per shard of ids.
  detail::Directory directory;
  // With a resident budget (and only then), every directory operation takes this lock
  // first; it guards the LRU order and the choice of victims.
  std::mutex wide_mutex;
  detail::Lru lru;
  std::atomic<std::size_t> live_count{0};      // activations in the directory
  std::atomic<std::size_t> stopping_count{0};  // of which chosen to stop
  // Set once, by shutdown() or crash(), then every shard is visited under its lock: a
  // sender that took its shard lock afterwards sees it and activates nothing.
  std::atomic<bool> stopping{false};
  mutable std::shared_mutex namespaces_mutex;  // guards `namespaces`
  // Why an activation ended (RuntimeStats); the first four follow StopReason.
  enum class EndCause : std::uint8_t { idle, budget, drain, shutdown, reset, elsewhere };
  static constexpr std::size_t kEndCauses = 6;
  static EndCause end_cause(StopReason r) { return static_cast<EndCause>(r); }
  // A namespace's share of RuntimeStats.
  struct NamespaceCounters {
    std::atomic<std::uint64_t> activations{0};
    std::atomic<std::uint64_t> resident{0};
    std::array<std::atomic<std::uint64_t>, kEndCauses> ended{};
  };
  struct Namespace {
    ObjectFactory factory;
    NamespaceOptions options;
    // options.uncached_prefixes as the storage cache sees them (under the object's data).
    UncachedPrefixes cache_uncached;
    // What its objects share (made once the namespace has its place in `namespaces`: it
    // points at cache_uncached).
    std::optional<detail::ObjectSettings> object_settings{};
    std::unique_ptr<NamespaceCounters> counters = std::make_unique<NamespaceCounters>();
  };
  std::map<std::string, Namespace, std::less<>> namespaces;
  // Alarms the scheduler holds back for namespaces not registered yet. Counted under the
  // namespaces lock, so a registration either sees the count or its namespace is seen.
  std::atomic<std::size_t> alarms_held{0};
  // The alarm scheduler's check: true (and counted in alarms_held) if `ns` is unknown.
  bool hold_alarm_if_unregistered(std::string_view ns) {
    std::shared_lock lock(namespaces_mutex);
    if (namespaces.find(ns) != namespaces.end()) return false;
    alarms_held.fetch_add(1);
    return true;
  }
  bool stopped = false;  // shutdown() or crash() ran
  std::atomic<bool> crashed{false};  // crash() ran: nothing more may run
  // What a request dropped unanswered tells its sender (see ReplySink).
  std::shared_ptr<std::atomic<RuntimeErrc>> drop_reason =
      std::make_shared<std::atomic<RuntimeErrc>>(RuntimeErrc::object_reset);
  Runtime* self = nullptr;
  std::shared_ptr<detail::PostBox> posts;  // Inbox posts (see PostBox)

  // ---- RuntimeStats (the namespaces keep their own share) ----
  DurationHistogram turn_latency;
  std::atomic<std::uint64_t> alarms_set{0};
  std::atomic<std::uint64_t> alarms_removed{0};
  std::atomic<std::uint64_t> alarms_late{0};  // published by the alarm scheduler

  // ---- scale-out leases (leasing.cpp); only with options.node.id ----
  storage::LeaseTable* leases = nullptr;
  caf::actor lease_keeper;
  struct HeldLease {
    std::string object;  // the object's key prefix: what the lease is keyed by
    std::uint64_t token;
    caf::actor_addr host;
  };
  std::mutex leases_mutex;
  std::unordered_map<const detail::Activation*, HeldLease> held_leases;
  // Takes the lease of `act`'s object for this node (its host is `host`): the token, the
  // lease another node holds, or the store's error.
  std::variant<std::uint64_t, storage::LeaseHolder, caf::error> take_lease(
      const detail::Activation& act, caf::actor_addr host);
  // How long to wait for `holder`'s lease to run out, when the holder looks dead (no
  // heartbeat for two renewal periods, or presumed dead) and its lease ends soon; none
  // when the holder looks alive (its messages are refused with not_owner at once).
  std::optional<std::chrono::milliseconds> wait_out(const storage::LeaseHolder& holder);
  // Nodes presumed dead (Runtime::presume_dead) until the time each maps to (clock ms).
  std::unordered_map<std::string, std::int64_t> presumed_dead;
  // Runtime::hand_over was called: nothing activates here any more. `peers` are the other
  // live nodes as hand_over found them (under leases_mutex), where refused messages are
  // sent on to.
  std::atomic<bool> handing_over{false};
  std::vector<storage::NodeRecord> peers;
  // Why a message for an object not active here is refused while handing over: not_owner
  // naming a live peer (chosen by the object's hash, so one object's messages all go to
  // the same peer), or node_restarting when there is none.
  caf::error handed_over(std::uint64_t hash);
  // Releases the lease `act` holds, if any (not once crashed: a dead node releases nothing).
  void drop_lease(const detail::Activation* act);
  // The epoch generation of an activation under lease `token`: above every generation the
  // store had before it was shared.
  std::uint64_t leased_generation(std::uint64_t token) const { return generation + token; }

  Impl(storage::Backend& b, RuntimeOptions o) : store(b), backend(b), options(std::move(o)) {}

  caf::scheduler::test_coordinator* coordinator() const;

  // ---- admission (admission.cpp) ----
  // Where one message went: sent (under the directory's locks, see admit), parked, or
  // refused; the refusal is answered, and budget victims asked to stop, outside them.
  struct Admission {
    std::shared_ptr<detail::ReplySink> sink;  // held until the locks are released
    caf::error refused;               // or answer it with this
    std::vector<caf::actor> victims;  // activations to ask to stop (resident budget)
  };
  // Admits `env` for `id`: sent to its live activation (activating it if needed), or
  // parked for the next one if the live one is stopping, or refused.
  Admission admit(const ObjectId& id, detail::Envelope& env);
  // The wide lock when there is a resident budget; otherwise nothing.
  std::unique_lock<std::mutex> wide_lock();
  // Spawns an activation of `id` (hash `hash`) in `shard`, whose lock (and the wide lock)
  // must be held. `cause` is the trace context of the message that activates it (the
  // activation span's parent).
  detail::Activation* spawn_locked(detail::Directory::Shard& shard, std::uint64_t hash,
                                   const ObjectId& id, caf::error& failure,
                                   const std::optional<trace::TraceContext>& cause);
  // Budget victims, least recently used first, marked stopping; the wide lock held.
  std::vector<caf::actor> pick_victims_locked();
  // Marks `act` stopping if it is idle (nothing accepted, no lease). Locks taken inside.
  bool try_begin_stop(detail::Activation* act);
  // As try_begin_stop, but leases do not hold it back (DurableObject::dispose).
  bool try_begin_dispose(detail::Activation* act);
  // The activation stopped (on_stop done, or reset): forget it and hand its parked
  // messages to a new activation. `next` is that id's next start reason; with `remember`
  // false (an object with no state, DurableObject::dispose_empty) a `wake` is not recorded
  // and the id leaves no trace in the directory. `cause` is counted in the stats.
  void end(detail::Activation* act, StartReason next, EndCause cause, bool remember = true);
  // The counters of the namespace `ns`, or null if it is not registered.
  NamespaceCounters* counters_of(std::string_view ns) const;
  // Marks the runtime stopping and returns every live activation (shutdown, crash).
  std::vector<detail::ActivationRef> stop_admitting();
  // Empties the directory once the actor system is gone (shutdown, crash).
  void forget_all();
};

}  // namespace dorm
