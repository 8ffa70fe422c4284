#include "object_host.hpp"

#include <time.h>

#include <utility>

#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::detail {
namespace {

// The slow-turn warning's clock: the kernel's coarse monotonic clock (a few milliseconds
// of resolution, enough for a threshold of ~100 ms) costs a memory read where the precise
// one reads the hardware clock, twice per turn.
std::chrono::nanoseconds coarse_now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

}  // namespace

ObjectHost::ObjectHost(caf::actor_config& cfg, ActivationRef activation,
                       std::unique_ptr<DurableObject> object, StartReason reason, Epoch epoch,
                       const ObjectSettings& settings,
                       std::optional<trace::TraceContext> cause)
    : caf::event_based_actor(cfg),
      activation_(std::move(activation)),
      object_(std::move(object)),
      storage_(settings, activation_->id, epoch),
      start_reason_(static_cast<std::uint8_t>(reason)) {
  if (cause) extras().trace = std::move(cause);
  object_->host_ = this;
}

ObjectHost::~ObjectHost() {
  if (object_) object_->host_ = nullptr;
}

ObjectHost::Extras& ObjectHost::extras() {
  if (!extras_) extras_ = std::make_unique<Extras>();
  return *extras_;
}

template <class Body>
caf::error ObjectHost::run_turn(const char* what, Body&& body) {
  // Timed on the precise clock (a vDSO read, tens of nanoseconds), unlike the slow-turn
  // warning: most turns take well under the coarse clock's few milliseconds.
  const auto started = std::chrono::steady_clock::now();
  in_turn_ = true;
  storage_.begin_turn();
  caf::error failure;
  try {
    body();
  } catch (const ErrorException& e) {
    failure = make_error(
        e.error().code == ErrorCode::no_space ? RuntimeErrc::no_space : RuntimeErrc::turn_failed,
        std::string(what) + " threw: " + e.what());
  } catch (const std::exception& e) {
    failure = make_error(RuntimeErrc::turn_failed, std::string(what) + " threw: " + e.what());
  }
  if (!failure) {
    failure = finish_turn();
  } else {
    storage_.discard();
    outbox_.reset();
  }
  in_turn_ = false;
  impl()->turn_latency.record(std::chrono::steady_clock::now() - started);
  return failure;
}

void ObjectHost::on_exit() {
  // Adopted helpers do not outlive the activation they belong to.
  if (extras_) {
    for (auto& [addr, on_down] : extras_->adopted) {
      if (auto actor = caf::actor_cast<caf::actor>(addr)) {
        caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
      }
    }
  }
  if (object_) object_->host_ = nullptr;
  object_.reset();
  // The actor may outlive this a little (references to it held elsewhere); its cache is
  // of no use any more.
  storage_.drop_cache();
  handlers_ = caf::behavior{};
  extras_.reset();
  activation_.reset();
}

caf::behavior ObjectHost::make_behavior() {
  // Scale-out: the object's lease first. Held elsewhere, nothing runs here.
  if (impl()->leases) return claim_lease(std::nullopt);
  return start_running();
}

caf::behavior ObjectHost::claim_lease(std::optional<std::int64_t> wait_until) {
  auto taken = impl()->take_lease(*activation_, address());
  if (auto* failure = std::get_if<caf::error>(&taken)) return refuse(*failure);
  if (auto* holder = std::get_if<storage::LeaseHolder>(&taken)) {
    // A holder that stopped announcing itself (or that could not be reached) is presumed
    // dead: its lease runs out soon, and this activation takes the object over then.
    // Messages wait in the mailbox meanwhile.
    const std::int64_t now = impl()->clock->now_ms();
    if (!wait_until) {
      if (auto wait = impl()->wait_out(*holder)) wait_until = now + wait->count();
    }
    if (!wait_until || now >= *wait_until) {
      return refuse(make_not_owner(OwnerInfo{holder->node, holder->address, holder->expires_ms}));
    }
    const auto step = std::min<std::int64_t>(*wait_until - now, impl()->options.node.renew_every.count());
    set_default_handler(caf::skip);
    delayed_send(this, std::chrono::milliseconds(std::max<std::int64_t>(step, 1)), LeaseRetry{});
    return {[this, wait_until](LeaseRetry) { become(claim_lease(wait_until)); }};
  }
  const auto token = std::get<std::uint64_t>(taken);
  storage_.hold_lease(token, impl()->leased_generation(token));
  return start_running();
}

caf::behavior ObjectHost::start_running() {
  // on_start completes before any message is handled: messages sent meanwhile wait in the
  // mailbox, in send order.
  auto span = start_span(trace::kActivationSpan, trace());
  span.set_attribute(trace::attr::kStartReason, std::string(to_string(start_reason())));
  // Before on_start: spans the object starts there are children of the activation's.
  if (span.recording()) extras().trace = span.context();
  auto failure = run_turn("on_start", [&] { object_->on_start(start_reason()); });
  if (failure) {
    span.record_exception("dorm.StartFailed", describe(failure));
    span.end();
    reset(failure);
    return {};
  }
  span.set_status(trace::SpanStatus::ok);
  span.end();
  handlers_ = object_->behavior();
  phase_ = Phase::running;
  set_down_handler([this](caf::down_msg& down) { adopted_down(down); });
  // Every message goes through the default handler, which learns the host from its `self`
  // argument, so all running hosts can share one behavior: one of its own (a lambda
  // capturing `this`) was one more allocation per resident object.
  set_default_handler([](caf::scheduled_actor* self, caf::message_view& msg) {
    return static_cast<ObjectHost*>(self)->handle_message(msg);
  });
  touch();
  return running_behavior();
}

const caf::behavior& ObjectHost::running_behavior() {
  // A behavior keeps an actor alive; this one's only case matches a type nobody sends.
  struct NeverSent {};
  static const caf::behavior shared{[](NeverSent) {}};
  return shared;
}

caf::behavior ObjectHost::refuse(const caf::error& why) {
  // The activation leaves the directory now, so later messages start a new one (which
  // asks for the lease again); those already in the mailbox are answered with `why`, and
  // the stop request queued behind them ends the actor.
  phase_ = Phase::stopping;
  impl()->end(activation_.get(), start_reason(), Runtime::Impl::EndCause::elsewhere, false);
  caf::anon_send(this, StopRequest{StopReason::idle});
  // Whatever else reached it (a hand-over, a lease retry) has nothing left to act on; a
  // wait's skip handler, still set, would keep it queued.
  set_default_handler(caf::drop);
  return {
      [why](Envelope& env) {
        if (env.reply) env.reply->deliver(why);
      },
      [this](StopRequest) { quit(); },
  };
}

caf::result<caf::message> ObjectHost::handle_message(caf::message_view& view) {
  auto& msg = view.content();
  // Envelopes first: they are nearly all the traffic.
  if (msg.match_elements<Envelope>()) {
    handle(msg.get_mutable_as<Envelope>(0));
  } else if (msg.match_elements<ContinuationReply>()) {
    run_continuation(msg.get_mutable_as<ContinuationReply>(0));
  } else if (msg.match_elements<PostedTurn>()) {
    run_posted(msg.get_mutable_as<PostedTurn>(0));
  } else if (msg.match_elements<StopRequest>()) {
    stop(msg.get_as<StopRequest>(0).reason);
  } else if (msg.match_elements<IdleCheck>()) {
    idle_check();
  } else if (msg.match_elements<HandOver>()) {
    hand_over();
  } else if (msg.match_elements<LeaseLost>()) {
    // Another node owns the object now: whatever this activation holds in memory is not
    // the object's any more, and it must not answer from it.
    if (!resetting_ && phase_ == Phase::running) {
      reset(make_error(RuntimeErrc::object_reset, "the object's lease was lost to another node"));
    }
  } else {
    return caf::sec::unexpected_message;
  }
  return caf::message{};
}

void ObjectHost::handle(Envelope& env) {
  if (impl()->crashed.load()) {
    // The runtime died with this message inside: it was never handled.
    if (env.reply) env.reply->deliver(make_error(RuntimeErrc::node_restarting));
    return;
  }
  if (resetting_ || phase_ != Phase::running) {
    if (env.reply) env.reply->deliver(make_error(RuntimeErrc::object_reset));
    return;
  }
  if (env.payload.match_elements<AlarmInvocation>()) {
    return run_alarm(env, env.payload.get_as<AlarmInvocation>(0));
  }
  auto started = coarse_now();
  caf::optional<caf::message> result;
  auto failure = run_turn("handler", [&] { result = handlers_(env.payload); });
  if (activation_) activation_->accepted.fetch_sub(1);
  if (failure) {
    if (env.reply) env.reply->deliver(failure);
    reset(failure);
    return;
  }
  if (!result) {
    // No handler matched: nothing ran (the turn committed nothing), so nothing to undo.
    if (env.reply) {
      env.reply->deliver(make_error(RuntimeErrc::turn_failed,
                                    "no handler for " + caf::to_string(env.payload)));
    }
    touch();
    return;
  }
  if (env.reply) env.reply->deliver(std::move(*result));
  touch();
  auto took = coarse_now() - started;
  if (took >= impl()->options.slow_turn) {
    log::warn("slow_turn",
              {{"ns", id().ns()},
               {"id", id().to_string()},
               {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(took).count()}});
  }
}


void ObjectHost::adopted_down(const caf::down_msg& down) {
  if (!extras_) return;
  auto& adopted = extras_->adopted;
  auto it = adopted.find(down.source);
  if (it == adopted.end()) return;
  auto on_down = std::move(it->second);
  adopted.erase(it);
  if (impl()->crashed.load() || resetting_ || phase_ != Phase::running || !on_down) return;
  if (auto failure = run_turn("adopted actor down", [&] { on_down(); })) {
    reset(failure);
    return;
  }
  touch();
}

void ObjectHost::run_continuation(ContinuationReply& reply) {
  if (impl()->crashed.load()) return;
  if (!extras_) return;
  auto& continuations = extras_->continuations;
  auto it = continuations.find(reply.id);
  if (it == continuations.end() || resetting_ || phase_ != Phase::running) return;
  auto then = std::move(it->second);
  continuations.erase(it);
  if (auto failure = run_turn("continuation", [&] { then(std::move(reply.reply)); })) {
    reset(failure);
    return;
  }
  touch();
}

void ObjectHost::run_posted(PostedTurn& posted) {
  if (impl()->crashed.load() || resetting_ || phase_ != Phase::running || !posted.fn) return;
  auto fn = std::move(posted.fn);
  if (auto failure = run_turn("posted", [&] { fn(); })) {
    reset(failure);
    return;
  }
  touch();
}

void ObjectHost::run_alarm(Envelope& env, const AlarmInvocation& invocation) {
  std::vector<trace::SpanLink> links;
  if (auto activation = trace()) links.push_back({*activation, {}});
  auto span = start_span(trace::kAlarmSpan, env.trace, std::move(links));
  auto now = impl()->clock->now_ms();
  span.set_attribute(trace::attr::kAlarmName, invocation.name);
  span.set_attribute(trace::attr::kAlarmAttempt, std::int64_t{invocation.attempt});
  span.set_attribute(trace::attr::kAlarmScheduledMs, invocation.scheduled_ms);
  span.set_attribute(trace::attr::kAlarmLatenessMs, now - invocation.scheduled_ms);
  span.set_attribute(trace::attr::kAlarmExhausted, invocation.exhausted);
  auto failure = run_turn(invocation.exhausted ? "on_alarm_exhausted" : "on_alarm", [&] {
    auto record = storage_.read_alarm(invocation.name).value_or_throw();
    // Set again or deleted since the scheduler read the index: that delivery is stale.
    if (!record || record->version != invocation.version) {
      span.set_attribute("dorm.alarm.stale", true);
      return;
    }
    AlarmInfo info{invocation.name, invocation.attempt, invocation.scheduled_ms, now};
    if (invocation.exhausted) {
      object_->on_alarm_exhausted(info);
    } else {
      object_->on_alarm(info);
    }
    // Clear the delivered version only: a handler that set the alarm again keeps it.
    auto after = storage_.read_alarm(invocation.name).value_or_throw();
    if (after && after->version == invocation.version) storage_.remove_alarm(invocation.name, *after);
  });
  if (activation_) activation_->accepted.fetch_sub(1);
  if (failure) {
    span.record_exception("dorm.AlarmFailed", describe(failure));
    span.end();
    if (env.reply) env.reply->deliver(failure);
    reset(failure);
    return;
  }
  span.set_status(trace::SpanStatus::ok);
  span.end();
  if (env.reply) env.reply->deliver(caf::message{});
  touch();
}

void ObjectHost::touch() {
  // Only an idle timeout needs the time (a clock read per turn otherwise).
  if (idle_timeout().count() > 0) last_activity_ms_ = impl()->clock->now_ms();
  if (std::exchange(dispose_requested_, false) && impl()->try_begin_dispose(activation_.get())) {
    stop(StopReason::idle, remember_on_dispose_);
    return;
  }
  // Runtime::hand_over: the turn that made it busy is over; its lease goes to the next node.
  if (impl()->handing_over.load(std::memory_order_relaxed) && impl()->try_begin_stop(activation_.get())) {
    stop(StopReason::drain);
    return;
  }
  if (idle_timeout().count() > 0 && !idle_check_pending_) {
    idle_check_pending_ = true;
    delayed_send(this, idle_timeout(), IdleCheck{});
  }
}

void ObjectHost::hand_over() {
  if (phase_ != Phase::running || resetting_) return;
  if (impl()->try_begin_stop(activation_.get())) {
    stop(StopReason::drain);
    return;
  }
  // Busy or held open: touch() stops it after its next turn; this catches a hold that
  // ends without one.
  delayed_send(this, kHandOverRecheck, HandOver{});
}

void ObjectHost::idle_check() {
  idle_check_pending_ = false;
  if (phase_ != Phase::running || resetting_) return;
  auto idle = std::chrono::milliseconds(impl()->clock->now_ms() - last_activity_ms_);
  if (idle >= idle_timeout() && impl()->try_begin_stop(activation_.get())) {
    stop(StopReason::idle);
    return;
  }
  // Busy, leased, or used since the check was armed: look again later.
  idle_check_pending_ = true;
  delayed_send(this, idle >= idle_timeout() ? idle_timeout() : idle_timeout() - idle, IdleCheck{});
}

void ObjectHost::stop(StopReason reason, bool remember) {
  if (phase_ != Phase::running || resetting_) return;
  phase_ = Phase::stopping;
  caf::error failure = run_turn("on_stop", [&] { object_->on_stop(reason); });
  if (failure) {
    log::warn("on_stop_failed",
              {{"ns", id().ns()}, {"id", id().to_string()}, {"error", describe(failure)}});
  }
  impl()->end(activation_.get(), StartReason::wake, Runtime::Impl::end_cause(reason), remember);
  quit();
}

caf::error ObjectHost::finish_turn() {
  if (const auto& failure = storage_.failure()) {
    auto error = make_error(
        failure->code == ErrorCode::no_space ? RuntimeErrc::no_space : RuntimeErrc::turn_failed,
        failure->describe());
    storage_.discard();
    outbox_.reset();
    return error;
  }
  if (auto committed = commit_storage(); !committed) {
    outbox_.reset();
    if (committed.error().code == ErrorCode::fenced) {
      // The runtime crashed under this turn: to the sender it never happened.
      return make_error(RuntimeErrc::node_restarting, committed.error().message);
    }
    if (committed.error().code == ErrorCode::no_space) {
      // The store refused the batch for space and applied nothing (storage's reserve): a
      // condition of the disk, reported once by whoever watches it, not by every object.
      return make_error(RuntimeErrc::no_space, committed.error().message);
    }
    return make_error(RuntimeErrc::turn_failed, "commit failed: " + committed.error().describe());
  }
  release_outbox();
  return {};
}

Result<void> ObjectHost::commit_storage() {
  auto alarm_changes = storage_.take_alarm_changes();
  auto committed = storage_.commit();
  // Only now, with the batch durable, may the scheduler see its alarms. A store may fail a
  // commit it applied, so a failed one is reported too, as uncertain; a fenced one is not
  // (the runtime crashed: its scheduler is gone).
  bool fenced = !committed && committed.error().code == ErrorCode::fenced;
  if (committed) {
    for (const auto& change : alarm_changes) {
      (change.version ? impl()->alarms_set : impl()->alarms_removed)
          .fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!alarm_changes.empty() && impl()->alarm_scheduler && !fenced) {
    caf::anon_send(impl()->alarm_scheduler,
                   AlarmChanged{std::move(alarm_changes), static_cast<bool>(committed)});
  }
  return committed;
}

void ObjectHost::release_outbox() {
  auto out = std::move(outbox_);
  if (!out) return;
  for (auto& o : *out) {
    if (o.effect && !o.delay) {
      o.effect();
      continue;
    }
    if (o.effect) {
      // A timer: its effect comes back as a continuation, so it runs as a turn.
      std::uint64_t id = extras().next_continuation++;
      extras().continuations.emplace(id, [effect = std::move(o.effect)](caf::expected<caf::message>) {
        effect();
      });
      delayed_send(this, *o.delay, ContinuationReply{id, caf::message{}});
      continue;
    }
    if (!o.then) {
      runtime().deliver(o.to, std::move(o.msg), nullptr);
      continue;
    }
    std::uint64_t id = extras().next_continuation++;
    extras().continuations.emplace(id, std::move(o.then));
    // A weak address: a pending reply must not keep a stopped activation alive.
    caf::actor_addr self = address();
    runtime().deliver(o.to, std::move(o.msg), [self, id](caf::expected<caf::message> r) {
      if (auto me = caf::actor_cast<caf::actor>(self)) {
        caf::anon_send(me, ContinuationReply{id, std::move(r)});
      }
    });
  }
}

void ObjectHost::reset(const caf::error& why) {
  resetting_ = true;
  auto reason = describe(why);
  // A full disk resets every object that tried to write: one line each at warn would
  // bury the one line that matters (storage_no_space, from whoever watches the store).
  log::emit(is(why, RuntimeErrc::no_space) ? spdlog::level::debug : spdlog::level::warn, "object_reset",
            {{"ns", id().ns()}, {"id", id().to_string()}, {"reason", reason}});
  auto span = start_span(trace::kResetSpan, trace());
  span.set_attribute(trace::attr::kResetReason, reason);
  span.record_exception("dorm.ObjectReset", reason);
  span.end();
  // New messages go to a fresh activation from now on; the ones still in this mailbox are
  // dropped with it, and their reply sinks answer object_reset.
  impl()->end(activation_.get(), StartReason::after_reset, Runtime::Impl::EndCause::reset);
  quit(why);
}

trace::Span ObjectHost::start_span(std::string_view name, std::optional<trace::TraceContext> parent,
                                   std::vector<trace::SpanLink> links) {
  auto* tracer = impl()->options.tracer;
  if (!tracer) return {};
  trace::SpanOptions options;
  options.parent = std::move(parent);
  options.links = std::move(links);
  options.attributes = {
      {trace::attr::kNamespace, id().ns()},
      {trace::attr::kObjectId, id().to_string()},
      {trace::attr::kEpochGeneration, static_cast<std::int64_t>(epoch().generation)},
      {trace::attr::kEpochActivation, static_cast<std::int64_t>(epoch().activation)},
  };
  return tracer->start_span(std::string(name), std::move(options));
}

Result<ObjectStorage*> ObjectHost::storage() {
  if (!in_turn()) return Error{ErrorCode::invalid_argument, "object storage used outside a turn"};
  return &storage_;
}

Result<void> ObjectHost::commit_early() {
  if (!in_turn() || phase_ != Phase::starting) {
    return Error{ErrorCode::invalid_argument, "commit() is only allowed in on_start"};
  }
  if (const auto& failure = storage_.failure()) return *failure;
  auto committed = commit_storage();
  if (!committed) {
    outbox_.reset();
    return storage_.fail_turn(committed.error());
  }
  release_outbox();
  return {};
}

void ObjectHost::send_message(const ObjectHandle& to, caf::message msg) {
  outbox().push_back(Outgoing{to, std::move(msg), {}, {}, std::nullopt});
  if (!in_turn()) release_outbox();
}

void ObjectHost::after_commit(std::function<void()> effect) {
  outbox().push_back(Outgoing{{}, {}, {}, std::move(effect), std::nullopt});
  if (!in_turn()) release_outbox();
}

void ObjectHost::after(std::chrono::milliseconds delay, std::function<void()> then) {
  outbox().push_back(Outgoing{{}, {}, {}, std::move(then), delay});
  if (!in_turn()) release_outbox();
}

void ObjectHost::adopt(const caf::actor& actor, std::function<void()> on_down) {
  if (!actor) return;
  extras().adopted[actor.address()] = std::move(on_down);
  monitor(actor);
}

void ObjectHost::request_message(const ObjectHandle& to, caf::message msg,
                                 DurableObject::Continuation then) {
  outbox().push_back(Outgoing{to, std::move(msg), std::move(then), {}, std::nullopt});
  if (!in_turn()) release_outbox();
}

}  // namespace dorm::detail
