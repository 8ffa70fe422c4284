// DurableObject — the base class of every durable object.
//
// A durable object is addressed by an ObjectId in a namespace; at most one activation of
// it exists in a process at a time. Its state lives in the runtime's storage under its
// own key prefix and is reached only through the storage calls below, which are
// synchronous: nothing else runs on this object while a handler runs (the input gate).
//
// Each message is handled in one *turn*: the handler from behavior() runs, everything it
// wrote commits atomically, and only then are its reply and the messages it sent
// released (the output gate). If the commit fails, nothing is released, the object is
// reset (this instance is dropped; messages queued behind it fail with object_reset) and
// the next message activates a fresh instance from storage. A handler that throws, or a
// storage call that breaks a limit, fails its turn the same way: an instance whose
// memory may hold changes that storage does not is never used again.
//
// Object code sends only through send() and request() here, never through CAF directly:
// CAF would release a message the moment it is sent, before the turn's writes are durable.
#pragma once

#include <caf/actor.hpp>
#include <caf/behavior.hpp>
#include <caf/expected.hpp>
#include <caf/intrusive_ptr.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/runtime/alarms.hpp"
#include "dorm/runtime/epoch.hpp"
#include "dorm/runtime/object_id.hpp"
#include "dorm/runtime/tracing.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm {

class Runtime;
class Clock;
namespace detail {
class ObjectHost;
struct Activation;
// Activations are reference counted in place (directory.cpp): the directory, the host
// actor and every Lease of it hold one reference each.
void intrusive_ptr_add_ref(const Activation* act) noexcept;
void intrusive_ptr_release(const Activation* act) noexcept;
using ActivationRef = caf::intrusive_ptr<Activation>;
struct PostBox;
}

// A way into one activation from any thread: post() runs a function as a turn of that
// activation (its writes commit, its sends are gated, a throw resets the object), in the
// order posted. For work that finishes on a thread the runtime does not own — an engine
// pool's callbacks, a library's completion thread. A post that arrives after the
// activation ended, or after the runtime stopped, is dropped (the function is destroyed
// unrun, on some thread). Copyable, cheap, safe to outlive the runtime.
//
// On virtual time, posts wait in a queue that Runtime::run_until_idle() delivers on the
// test's thread (CAF's test coordinator is not thread-safe); Runtime::wait_for_posts()
// blocks until one arrives.
class Inbox {
 public:
  Inbox() = default;
  void post(std::function<void()> fn) const;

 private:
  friend class detail::ObjectHost;
  Inbox(std::weak_ptr<detail::PostBox> box, caf::actor_addr target)
      : box_(std::move(box)), target_(std::move(target)) {}
  std::weak_ptr<detail::PostBox> box_;
  caf::actor_addr target_;
};

// Pins an activation in memory: while any lease of it is held, neither its namespace's
// idle timeout nor the resident budget stops it. Movable; released on destruction.
class Lease {
 public:
  Lease() = default;
  Lease(Lease&& other) noexcept = default;
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { release(); }

  bool held() const { return static_cast<bool>(activation_); }
  void release();

 private:
  friend class detail::ObjectHost;
  explicit Lease(detail::ActivationRef activation);
  detail::ActivationRef activation_;
};

// Why an activation started. (after_crash, after_shutdown and after_redeploy come with
// restart support; today a first activation in a runtime reports `first`.)
enum class StartReason { first, wake, after_reset, after_crash, after_shutdown, after_redeploy };
// Why an activation stopped.
enum class StopReason { idle, budget, drain, shutdown };

const char* to_string(StartReason r);
const char* to_string(StopReason r);

// A reference to an object that may not be active yet; the first message activates it.
struct ObjectHandle {
  ObjectId id;
};

// Which keys list() returns: either a prefix, or start/start_after/end, of the object's
// own keys; forward or reverse; at most `limit` (0 = all).
struct ListOptions {
  std::string prefix;
  std::optional<std::string> start;
  std::optional<std::string> start_after;
  std::optional<std::string> end;
  bool reverse = false;
  std::size_t limit = 0;
};

class DurableObject {
 public:
  virtual ~DurableObject() = default;

  // Runs before any message, in its own turn. Synchronous: it may read and write storage
  // and end its batch early with commit(), but not wait for other actors.
  virtual void on_start(StartReason) {}
  // Runs when the activation stops for one of StopReason's reasons (not on a reset, not
  // on a crash), in a turn of its own.
  virtual void on_stop(StopReason) {}
  // The message handlers. Each handler's return value is the reply.
  virtual caf::behavior behavior() = 0;
  // An alarm is due; runs as a turn. Throwing (or a failed commit) fails this attempt and
  // the alarm is retried (see alarms.hpp). The alarm is cleared when the turn commits,
  // unless the handler set it again.
  virtual void on_alarm(const AlarmInfo&) {}
  // The alarm's last attempt failed; runs as a turn that also deletes the alarm.
  virtual void on_alarm_exhausted(const AlarmInfo&) {}

 protected:
  // ---- storage (this object's keys only); errors: limit_exceeded, io_error ----
  Result<std::optional<std::string>> get(std::string_view key);
  Result<std::vector<std::optional<std::string>>> get_many(std::span<const std::string> keys);
  Result<void> put(std::string_view key, std::string_view value);
  Result<void> put_many(std::span<const std::pair<std::string, std::string>> entries);
  // Returns whether the key existed.
  Result<bool> del(std::string_view key);
  // Returns how many of the keys existed.
  Result<std::size_t> del_many(std::span<const std::string> keys);
  Result<std::vector<storage::KeyValue>> list(const ListOptions& options = {});
  // Deletes every key and every alarm of this object.
  Result<void> delete_all();
  // Commits what this turn wrote so far and releases what it sent. Only in on_start
  // (anywhere else it fails with invalid_argument and changes nothing).
  Result<void> commit();
  // Whether the store refuses commits for lack of space right now (Backend::check_space):
  // no_space while it does. Reads still work then; an object that can answer without
  // writing (a replay, say) may still do so, and one that must write can refuse early,
  // before it runs anything, instead of failing at its commit.
  Result<void> check_storage_space() const;

  // ---- alarms: part of this turn's batch; "" is the default alarm ----
  // A due time in the past fires as soon as the turn has committed.
  Result<void> set_alarm(std::string_view name, std::int64_t due_ms);
  Result<void> set_alarm(std::int64_t due_ms) { return set_alarm("", due_ms); }
  Result<std::optional<std::int64_t>> get_alarm(std::string_view name = "");
  // Returns whether the alarm existed.
  Result<bool> delete_alarm(std::string_view name = "");

  // ---- runtime indexes: entries committed with this turn's batch ----
  Result<void> index_put(std::string_view index, std::string_view key, std::string_view value);
  Result<void> index_del(std::string_view index, std::string_view key);

  // ---- residency ----
  // A lease that keeps this activation in memory until released (see Lease).
  Lease keep_alive();
  // Ends this activation once the current turn has committed, whatever leases it holds
  // (the object decided it is idle): on_stop(idle) runs, memory is freed, storage stays,
  // and the next message activates it again. Dropped if messages are already waiting for
  // it (they are activity).
  void dispose();
  // As dispose(), for an object that holds nothing in storage: it found no state, or its
  // turn deleted all of it. The runtime then keeps no record of the id either (dispose()
  // remembers every id it ended, so that its next activation reports `wake`), so activating
  // an id that names nothing leaves nothing behind once it ends — a client that makes up
  // ids cannot grow the process. The next activation reports the runtime's start kind, as
  // for an id this runtime never saw.
  void dispose_empty();

  // ---- identity, time, messages ----
  const ObjectId& id() const;
  Epoch epoch() const;
  Runtime& runtime() const;
  const Clock& clock() const;

  // Sends a message to another object, released only when this turn commits.
  template <class... Ts>
  void send(const ObjectHandle& to, Ts&&... xs) {
    send_message(to, caf::make_message(std::forward<Ts>(xs)...));
  }
  void send_message(const ObjectHandle& to, caf::message msg);

  // Sends a request to another object, released only when this turn commits. The
  // continuation runs later as a turn of its own (its writes commit, its sends are gated,
  // and if it fails the object resets), with the reply or an error. If this activation is
  // gone by then, the reply is dropped.
  using Continuation = std::function<void(caf::expected<caf::message>)>;
  template <class... Ts>
  void request(const ObjectHandle& to, Continuation then, Ts&&... xs) {
    request_message(to, caf::make_message(std::forward<Ts>(xs)...), std::move(then));
  }
  void request_message(const ObjectHandle& to, caf::message msg, Continuation then);

  // ---- tracing ----
  // Starts a span named `name` on the runtime's tracer: a child of this activation's span
  // (so a span started in on_start sits under `dorm.activation`), carrying the object's
  // namespace, id and epoch as attributes. Without a tracer it records nothing. A span
  // ends when end() is called or when it is destroyed; keep it within the turn.
  trace::Span start_span(std::string_view name);

  // ---- effects and timers, behind the output gate ----
  // Runs `effect` once this turn's batch has committed (outside a turn: now). If the turn
  // fails, it never runs. For effects outside the runtime that must not get ahead of
  // storage, such as answering an HTTP request with what this turn stored.
  void after_commit(std::function<void()> effect);
  // Runs `then` as a turn of its own `delay` from now on the runtime's clock, armed once
  // this turn commits. Not durable: if this activation is gone by then, it never runs
  // (use an alarm for work that must survive).
  void after(std::chrono::milliseconds delay, std::function<void()> then);
  // This activation's Inbox, for callbacks that arrive on other threads.
  Inbox inbox() const;

  // ---- helper actors ----
  // The actor system this object runs in, to spawn helper actors (an open connection's
  // writer, say). Spawn them from an after_commit() effect, so a failed turn leaves none.
  caf::actor_system& system() const;
  // Makes `actor` belong to this activation: when it terminates, `on_down` runs as a turn
  // of this object; when this activation ends (evicted, reset, stopped, crashed) first,
  // `actor` is told to exit. Call it from the turn or an after_commit() effect.
  void adopt(const caf::actor& actor, std::function<void()> on_down);
  // Sends `msg` to a helper actor at once, from the worker thread that runs this object:
  // the helper runs on that worker as soon as this object lets go of it. (A message sent
  // from elsewhere, as caf::anon_send does, goes to another worker and wakes it; on a
  // small machine that worker is queued on this same CPU behind the rest of the turn.)
  // Not behind the output gate: call it from an after_commit() effect.
  void tell_helper(const caf::actor& helper, caf::message msg);

 private:
  friend class detail::ObjectHost;
  detail::ObjectHost* host_ = nullptr;
};

}  // namespace dorm
