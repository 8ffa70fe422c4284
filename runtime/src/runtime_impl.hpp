// Internals shared by Runtime and ObjectHost. Not installed; not part of the API.
#pragma once

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "alarm_records.hpp"
#include "dorm/runtime/errors.hpp"
#include "id_hash_set.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/fenced_backend.hpp"

namespace dorm::detail {

// Answers one request exactly once. If the message carrying it is dropped unanswered
// (its object was reset, or stopped, before handling it), the destructor answers with
// object_reset, so a sender never waits for a reply that will not come.
class ReplySink {
 public:
  // `drop_reason` is the runtime's: object_reset, or node_restarting once it crashed.
  ReplySink(ReplyHandler handler, std::shared_ptr<const std::atomic<RuntimeErrc>> drop_reason)
      : handler_(std::move(handler)), drop_reason_(std::move(drop_reason)) {}
  ~ReplySink() {
    if (!done_.exchange(true) && handler_) handler_(make_error(drop_reason_->load()));
  }
  void deliver(caf::expected<caf::message> reply) {
    if (!done_.exchange(true) && handler_) handler_(std::move(reply));
  }

 private:
  ReplyHandler handler_;
  std::shared_ptr<const std::atomic<RuntimeErrc>> drop_reason_;
  std::atomic<bool> done_{false};
};

// What a sender puts in an object's mailbox.
struct Envelope {
  caf::message payload;
  std::shared_ptr<ReplySink> reply;  // null for a plain send
  std::optional<trace::TraceContext> trace;  // the sender's span, if it traces
};

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

// A delivery finished (ok = its turn committed).
struct AlarmDone {
  std::string index_key;
  bool ok;
};

// Asks an activation to stop (runtime shutdown; later also eviction).
struct StopRequest {
  StopReason reason;
};

// Asks an activation to check whether it has been idle long enough to stop.
struct IdleCheck {};

// One live activation as the directory knows it.
struct Activation {
  caf::actor actor;
  // Messages accepted for it and not yet finished. Raised only under the directory lock,
  // so "zero under the lock" means no message is on its way to this activation.
  std::atomic<std::size_t> accepted{0};
  std::atomic<std::size_t> leases{0};  // keep_alive() leases held
  // Guarded by the directory lock:
  bool stopping = false;          // chosen to stop: new messages are parked, not sent
  std::vector<Envelope> parked;   // for the next activation, in arrival order
  std::list<ObjectId>::iterator lru;
};

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

namespace dorm {

struct Runtime::Impl {
  // Every storage call of this runtime goes through this handle, so that a runtime that
  // dies can be cut off from the store its successor uses (restart simulation).
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

  mutable std::mutex mutex;  // the directory lock: guards everything below
  struct Namespace {
    ObjectFactory factory;
    NamespaceOptions options;
  };
  std::map<std::string, Namespace, std::less<>> namespaces;
  std::map<ObjectId, std::shared_ptr<detail::Activation>> live;
  std::list<ObjectId> lru;          // live ids, most recently used first
  std::size_t stopping_count = 0;   // live activations already chosen to stop
  // Ids whose last activation was reset (consumed by the next activation), and hashes of
  // ids this runtime evicted (their next activation is a wake).
  std::map<ObjectId, StartReason> next_start;
  detail::IdHashSet evicted;
  static std::uint64_t id_hash(const ObjectId& id);
  bool stopping = false;
  bool stopped = false;  // shutdown() or crash() ran
  std::atomic<bool> crashed{false};  // crash() ran: nothing more may run
  // What a request dropped unanswered tells its sender (see ReplySink).
  std::shared_ptr<std::atomic<RuntimeErrc>> drop_reason =
      std::make_shared<std::atomic<RuntimeErrc>>(RuntimeErrc::object_reset);
  Runtime* self = nullptr;
  std::shared_ptr<detail::PostBox> posts;  // Inbox posts (see PostBox)

  Impl(storage::Backend& b, RuntimeOptions o) : backend(b), options(std::move(o)) {}

  caf::scheduler::test_coordinator* coordinator() const;

  // Where one message goes, decided under the directory lock and carried out outside it
  // (sending, answering refusals and asking budget victims to stop never hold the lock).
  struct Admission {
    caf::actor target;                // send the envelope here, if set
    caf::error refused;               // or answer it with this
    std::vector<caf::actor> victims;  // activations to ask to stop (resident budget)
  };
  // Admits `env` for `id`: to its live activation (activating it if needed), or parked
  // for the next one if the live one is stopping, or refused.
  Admission admit(const ObjectId& id, detail::Envelope& env);
  // Spawns an activation of `id`; the directory lock must be held. `cause` is the trace
  // context of the message that activates it (the activation span's parent).
  std::shared_ptr<detail::Activation> spawn_locked(const ObjectId& id, caf::error& failure,
                                                   const std::optional<trace::TraceContext>& cause);
  // Budget victims, least recently used first, marked stopping; lock held.
  std::vector<caf::actor> pick_victims_locked();
  // Marks `act` stopping if it is idle (nothing accepted, no lease). Lock taken inside.
  bool try_begin_stop(const detail::Activation* act);
  // As try_begin_stop, but leases do not hold it back (DurableObject::dispose).
  bool try_begin_dispose(const detail::Activation* act);
  // The activation stopped (on_stop done, or reset): forget it and hand its parked
  // messages to a new activation. `next` is that id's next start reason; with `remember`
  // false (an object with no state, DurableObject::dispose_empty) a `wake` is not recorded
  // and the id leaves no trace in the directory.
  void end(const ObjectId& id, detail::Activation* act, StartReason next, bool remember = true);
};

}  // namespace dorm
