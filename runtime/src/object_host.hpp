// ObjectHost — the CAF actor that runs one activation of one durable object.
//
// It owns the DurableObject instance, runs on_start before anything else, and turns every
// Envelope into a turn: begin the turn's batch, run the object's handler, commit, then
// release the reply and the outbox. Its ObjectStorage (object_storage.hpp) is the storage
// side: what a turn writes and the commit; the host is lifecycle and turns.
#pragma once

#include <caf/event_based_actor.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "object_storage.hpp"
#include "runtime_impl.hpp"

namespace dorm::detail {

class ObjectHost : public caf::event_based_actor {
 public:
  ObjectHost(caf::actor_config& cfg, ActivationRef activation, std::unique_ptr<DurableObject> object,
             StartReason reason, Epoch epoch, const ObjectSettings& settings,
             std::optional<trace::TraceContext> cause);
  ~ObjectHost() override;

  caf::behavior make_behavior() override;
  // Drops the object and this activation's directory record: the record holds a strong
  // reference to this actor, so keeping it would keep the actor alive forever.
  void on_exit() override;
  const char* name() const override { return "dorm.object"; }

  // ---- for DurableObject's storage API ----
  // The activation's storage (object_storage.hpp); an error outside a turn, where a write
  // could not be part of any commit.
  Result<ObjectStorage*> storage();
  Result<void> commit_early();
  Result<void> check_storage_space() const { return impl()->backend.check_space(); }
  void send_message(const ObjectHandle& to, caf::message msg);
  Lease keep_alive() { return Lease(activation_); }
  void request_dispose(bool remember) {
    dispose_requested_ = true;
    remember_on_dispose_ = remember;
  }
  void request_message(const ObjectHandle& to, caf::message msg,
                       DurableObject::Continuation then);
  void after_commit(std::function<void()> effect);
  void after(std::chrono::milliseconds delay, std::function<void()> then);
  Inbox inbox() const { return Inbox(impl()->posts, address()); }
  void adopt(const caf::actor& actor, std::function<void()> on_down);
  // DurableObject::tell_helper: enqueued with this actor's execution unit, so the helper
  // is scheduled on this worker (CAF's exec_later) instead of on another one, woken.
  void tell_helper(const caf::actor& helper, caf::message msg) {
    if (helper)
      caf::actor_cast<caf::abstract_actor*>(helper)->enqueue(nullptr, caf::make_message_id(),
                                                             std::move(msg), context());
  }

  // The directory's copy (valid until on_exit, after which no turn runs).
  const ObjectId& id() const { return activation_->id; }
  Epoch epoch() const { return storage_.epoch(); }
  Runtime& runtime() const { return *impl()->self; }
  const Clock& clock() const { return *impl()->clock; }
  // A span under this activation's span (see DurableObject::start_span).
  trace::Span start_child_span(std::string_view name) { return start_span(name, trace()); }

 private:
  enum class Phase : std::uint8_t { starting, running, stopping };

  void handle(Envelope& env);
  void run_alarm(Envelope& env, const AlarmInvocation& invocation);
  void run_continuation(ContinuationReply& reply);
  void run_posted(PostedTurn& posted);
  void adopted_down(const caf::down_msg& down);
  // Runs `body` as a turn (`what` names it in errors): commit, then release. Returns the
  // turn's failure; the caller resets the object on one.
  template <class Body>
  caf::error run_turn(const char* what, Body&& body);
  // `remember`: the runtime records the id so its next activation is a `wake` (false
  // only for dispose_empty()).
  void stop(StopReason reason, bool remember = true);
  // After every turn: remember the time and make sure an idle check is pending.
  void touch();
  void idle_check();
  // Runtime::hand_over: stops now if idle, or looks again every kHandOverRecheck.
  void hand_over();
  static constexpr std::chrono::milliseconds kHandOverRecheck{100};
  // Ends the current turn: commits the batch unless the turn already failed, then
  // releases the outbox. Returns the turn's failure, if any.
  caf::error finish_turn();
  // Commits the turn's batch, then tells the alarm scheduler what it changed in the index.
  Result<void> commit_storage();
  void release_outbox();
  void reset(const caf::error& why);
  // Scale-out: the lease is held elsewhere; answers what reached the mailbox with `why`.
  caf::behavior refuse(const caf::error& why);
  // Scale-out: takes the object's lease, then starts (start_running); or, when the holder
  // looks dead, asks again every renewal period until the lease it saw has run out
  // (`wait_until`, clock ms, set once waiting), so a lease released meanwhile (a node
  // handing its objects over as it stops) is taken at once; or refuses.
  caf::behavior claim_lease(std::optional<std::int64_t> wait_until);
  // on_start, then the behavior that handles the object's messages.
  caf::behavior start_running();
  // A span about this activation (namespace, id and epoch set) if the runtime traces;
  // otherwise one that records nothing.
  trace::Span start_span(std::string_view name, std::optional<trace::TraceContext> parent,
                         std::vector<trace::SpanLink> links = {});
  bool in_turn() const { return in_turn_; }
  std::chrono::milliseconds idle_timeout() const { return storage_.settings().idle_timeout; }
  Runtime::Impl* impl() const { return storage_.settings().runtime; }
  StartReason start_reason() const { return static_cast<StartReason>(start_reason_); }
  // Every message of a running host (see start_running).
  caf::result<caf::message> handle_message(caf::message_view& msg);
  static const caf::behavior& running_behavior();

  // What few activations use, made at first use: continuations of requests and timers,
  // adopted helper actors, a trace context.
  struct Extras {
    std::uint64_t next_continuation = 1;
    std::map<std::uint64_t, DurableObject::Continuation> continuations;
    // Adopted helper actors and what runs when each terminates.
    std::map<caf::actor_addr, std::function<void()>> adopted;
    // Until on_start begins: the trace context of the message that caused this
    // activation. From then on: the activation span's (the parent of a reset and of the
    // object's own spans, a link from alarms).
    std::optional<trace::TraceContext> trace;
  };
  Extras& extras();
  std::optional<trace::TraceContext> trace() const {
    return extras_ ? extras_->trace : std::nullopt;
  }

  // Every resident object carries these members, so they are kept few and small: the
  // id lives in the Activation, the epoch in the storage, the turn's batch and scratch
  // state only during a turn (TurnScratch), what few objects use in Extras.
  ActivationRef activation_;
  std::unique_ptr<DurableObject> object_;
  caf::behavior handlers_;
  ObjectStorage storage_;  // the turn's batch, limits, alarm records, index writes
  // What a turn releases once it commits: a message (with a continuation for a
  // request), or an effect, or a timer (an effect with a delay, run as a turn).
  struct Outgoing {
    ObjectHandle to;
    caf::message msg;
    DurableObject::Continuation then;  // empty for a plain send
    std::function<void()> effect;      // set: not a message
    std::optional<std::chrono::milliseconds> delay;  // set: `effect` is a timer
  };
  // Made by a turn's first send, released (and freed) when the turn commits.
  std::unique_ptr<std::vector<Outgoing>> outbox_;
  std::vector<Outgoing>& outbox() {
    if (!outbox_) outbox_ = std::make_unique<std::vector<Outgoing>>();
    return *outbox_;
  }
  std::unique_ptr<Extras> extras_;
  std::int64_t last_activity_ms_ = 0;
  std::uint8_t start_reason_;  // a StartReason, in a byte beside the flags
  Phase phase_ = Phase::starting;
  bool resetting_ = false;
  bool dispose_requested_ = false;  // DurableObject::dispose() in the current turn
  // False after dispose_empty(): the object has no state, so the runtime forgets its id.
  bool remember_on_dispose_ = true;
  bool in_turn_ = false;
  bool idle_check_pending_ = false;
};

}  // namespace dorm::detail
