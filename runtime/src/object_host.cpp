#include "object_host.hpp"


#include <utility>

#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::detail {
namespace {

Error limit_error(std::string_view what, std::size_t size, std::size_t limit) {
  return Error{ErrorCode::limit_exceeded, std::string(what) + " of " + std::to_string(size) +
                                              " bytes exceeds the limit of " +
                                              std::to_string(limit) + " bytes"};
}

Error outside_turn() {
  return Error{ErrorCode::invalid_argument, "object storage used outside a turn"};
}

}  // namespace

ObjectHost::ObjectHost(caf::actor_config& cfg, Runtime* runtime, Runtime::Impl* impl, ObjectId id,
                       std::shared_ptr<Activation> activation,
                       std::unique_ptr<DurableObject> object, StartReason reason, Epoch epoch,
                       std::chrono::milliseconds idle_timeout,
                       std::optional<trace::TraceContext> cause)
    : caf::event_based_actor(cfg),
      runtime_(runtime),
      impl_(impl),
      id_(std::move(id)),
      root_(keys::object_prefix(id_.ns(), id_.body())),
      prefix_(root_ + keys::kObjectData),
      activation_(std::move(activation)),
      object_(std::move(object)),
      start_reason_(reason),
      epoch_(epoch),
      batch_(impl->backend),
      idle_timeout_(idle_timeout),
      trace_(std::move(cause)) {
  object_->host_ = this;
}

ObjectHost::~ObjectHost() {
  if (object_) object_->host_ = nullptr;
}

template <class Body>
caf::error ObjectHost::run_turn(const char* what, Body&& body) {
  in_turn_ = true;
  turn_error_.reset();
  caf::error failure;
  try {
    body();
  } catch (const std::exception& e) {
    failure = make_error(RuntimeErrc::turn_failed, std::string(what) + " threw: " + e.what());
  }
  if (!failure) {
    failure = finish_turn();
  } else {
    batch_.clear();
    outbox_.clear();
    earliest_alarm_set_.reset();
  }
  in_turn_ = false;
  return failure;
}

void ObjectHost::on_exit() {
  // Adopted helpers do not outlive the activation they belong to.
  for (auto& [addr, on_down] : adopted_) {
    if (auto actor = caf::actor_cast<caf::actor>(addr)) {
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    }
  }
  adopted_.clear();
  if (object_) object_->host_ = nullptr;
  object_.reset();
  handlers_ = caf::behavior{};
  continuations_.clear();
  activation_.reset();
}

caf::behavior ObjectHost::make_behavior() {
  // on_start completes before any message is handled: messages sent meanwhile wait in the
  // mailbox, in send order.
  auto span = start_span(trace::kActivationSpan, trace_);
  span.set_attribute(trace::attr::kStartReason, std::string(to_string(start_reason_)));
  // Before on_start: spans the object starts there are children of the activation's.
  if (span.recording()) trace_ = span.context();
  auto failure = run_turn("on_start", [&] { object_->on_start(start_reason_); });
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
  touch();
  return {
      [this](Envelope& env) { handle(env); },
      [this](ContinuationReply& reply) { run_continuation(reply); },
      [this](PostedTurn& posted) { run_posted(posted); },
      [this](const StopRequest& req) { stop(req.reason); },
      [this](IdleCheck) { idle_check(); },
  };
}

void ObjectHost::handle(Envelope& env) {
  if (impl_->crashed.load()) {
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
  auto started = std::chrono::steady_clock::now();
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
  auto took = std::chrono::steady_clock::now() - started;
  if (took > impl_->options.slow_turn) {
    log::warn("slow_turn",
              {{"ns", id_.ns()},
               {"id", id_.to_string()},
               {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(took).count()}});
  }
}


void ObjectHost::adopted_down(const caf::down_msg& down) {
  auto it = adopted_.find(down.source);
  if (it == adopted_.end()) return;
  auto on_down = std::move(it->second);
  adopted_.erase(it);
  if (impl_->crashed.load() || resetting_ || phase_ != Phase::running || !on_down) return;
  if (auto failure = run_turn("adopted actor down", [&] { on_down(); })) {
    reset(failure);
    return;
  }
  touch();
}

void ObjectHost::run_continuation(ContinuationReply& reply) {
  if (impl_->crashed.load()) return;
  auto it = continuations_.find(reply.id);
  if (it == continuations_.end() || resetting_ || phase_ != Phase::running) return;
  auto then = std::move(it->second);
  continuations_.erase(it);
  if (auto failure = run_turn("continuation", [&] { then(std::move(reply.reply)); })) {
    reset(failure);
    return;
  }
  touch();
}

void ObjectHost::run_posted(PostedTurn& posted) {
  if (impl_->crashed.load() || resetting_ || phase_ != Phase::running || !posted.fn) return;
  auto fn = std::move(posted.fn);
  if (auto failure = run_turn("posted", [&] { fn(); })) {
    reset(failure);
    return;
  }
  touch();
}

void ObjectHost::run_alarm(Envelope& env, const AlarmInvocation& invocation) {
  std::vector<trace::SpanLink> links;
  if (trace_) links.push_back({*trace_, {}});
  auto span = start_span(trace::kAlarmSpan, env.trace, std::move(links));
  auto now = impl_->clock->now_ms();
  span.set_attribute(trace::attr::kAlarmName, invocation.name);
  span.set_attribute(trace::attr::kAlarmAttempt, std::int64_t{invocation.attempt});
  span.set_attribute(trace::attr::kAlarmScheduledMs, invocation.scheduled_ms);
  span.set_attribute(trace::attr::kAlarmLatenessMs, now - invocation.scheduled_ms);
  span.set_attribute(trace::attr::kAlarmExhausted, invocation.exhausted);
  auto failure = run_turn(invocation.exhausted ? "on_alarm_exhausted" : "on_alarm", [&] {
    auto record = read_alarm(invocation.name).value_or_throw();
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
    auto after = read_alarm(invocation.name).value_or_throw();
    if (after && after->version == invocation.version) remove_alarm(invocation.name, *after);
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

Result<std::optional<AlarmRecord>> ObjectHost::read_alarm(std::string_view name) {
  auto raw = batch_.get(root_ + keys::kObjectAlarm + std::string(name));
  if (!raw) return std::move(raw).error();
  if (!*raw) return std::optional<AlarmRecord>{};
  auto record = decode_record(**raw);
  if (!record) {
    return Error{ErrorCode::corruption, "alarm record '" + std::string(name) + "' is malformed"};
  }
  return std::optional<AlarmRecord>{std::move(*record)};
}

void ObjectHost::remove_alarm(std::string_view name, const AlarmRecord& record) {
  batch_.del(root_ + keys::kObjectAlarm + std::string(name));
  batch_.del(keys::index_entry(keys::kAlarmIndex,
                               encode_index_key({record.due_ms, id_.ns(), std::string(id_.body()),
                                                 std::string(name)})));
}

Result<void> ObjectHost::set_alarm(std::string_view name, std::int64_t due_ms) {
  if (!in_turn()) return outside_turn();
  if (auto ok = check_write(name.size(), 64); !ok) return ok;
  auto existing = read_alarm(name);
  if (!existing) return fail_turn(std::move(existing).error());
  if (*existing) remove_alarm(name, **existing);
  AlarmRecord record{due_ms, std::to_string(epoch_.generation) + "." +
                                 std::to_string(epoch_.activation) + "." +
                                 std::to_string(++alarm_sequence_)};
  std::string index_key =
      encode_index_key({due_ms, id_.ns(), std::string(id_.body()), std::string(name)});
  batch_.put(root_ + keys::kObjectAlarm + std::string(name), encode_record(record));
  batch_.put(keys::index_entry(keys::kAlarmIndex, index_key), record.version);
  if (!earliest_alarm_set_ || index_key < *earliest_alarm_set_) earliest_alarm_set_ = index_key;
  return {};
}

Result<std::optional<std::int64_t>> ObjectHost::get_alarm(std::string_view name) {
  if (!in_turn()) return outside_turn();
  auto record = read_alarm(name);
  if (!record) return std::move(record).error();
  if (!*record) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{(*record)->due_ms};
}

Result<bool> ObjectHost::delete_alarm(std::string_view name) {
  if (!in_turn()) return outside_turn();
  if (auto ok = check_write(name.size(), 0); !ok) return std::move(ok).error();
  auto record = read_alarm(name);
  if (!record) return std::move(record).error();
  if (!*record) return false;
  remove_alarm(name, **record);
  return true;
}

void ObjectHost::touch() {
  last_activity_ms_ = impl_->clock->now_ms();
  if (std::exchange(dispose_requested_, false) && impl_->try_begin_dispose(activation_.get())) {
    stop(StopReason::idle, remember_on_dispose_);
    return;
  }
  if (idle_timeout_.count() > 0 && !idle_check_pending_) {
    idle_check_pending_ = true;
    delayed_send(this, idle_timeout_, IdleCheck{});
  }
}

void ObjectHost::idle_check() {
  idle_check_pending_ = false;
  if (phase_ != Phase::running || resetting_) return;
  auto idle = std::chrono::milliseconds(impl_->clock->now_ms() - last_activity_ms_);
  if (idle >= idle_timeout_ && impl_->try_begin_stop(activation_.get())) {
    stop(StopReason::idle);
    return;
  }
  // Busy, leased, or used since the check was armed: look again later.
  idle_check_pending_ = true;
  delayed_send(this, idle >= idle_timeout_ ? idle_timeout_ : idle_timeout_ - idle, IdleCheck{});
}

void ObjectHost::stop(StopReason reason, bool remember) {
  if (phase_ != Phase::running || resetting_) return;
  phase_ = Phase::stopping;
  caf::error failure = run_turn("on_stop", [&] { object_->on_stop(reason); });
  if (failure) {
    log::warn("on_stop_failed",
              {{"ns", id_.ns()}, {"id", id_.to_string()}, {"error", describe(failure)}});
  }
  impl_->end(id_, activation_.get(), StartReason::wake, remember);
  quit();
}

caf::error ObjectHost::finish_turn() {
  auto alarm_set = std::exchange(earliest_alarm_set_, std::nullopt);
  if (turn_error_) {
    batch_.clear();
    outbox_.clear();
    return make_error(RuntimeErrc::turn_failed, turn_error_->describe());
  }
  if (auto committed = commit_batch(); !committed) {
    outbox_.clear();
    if (committed.error().code == ErrorCode::fenced) {
      // The runtime crashed under this turn: to the sender it never happened.
      return make_error(RuntimeErrc::node_restarting, committed.error().message);
    }
    return make_error(RuntimeErrc::turn_failed, "commit failed: " + committed.error().describe());
  }
  // Only now, with the alarm durable, may the scheduler see it.
  if (alarm_set && impl_->alarm_scheduler) {
    caf::anon_send(impl_->alarm_scheduler, AlarmChanged{std::move(*alarm_set)});
  }
  release_outbox();
  return {};
}

Result<void> ObjectHost::commit_batch() {
  if (batch_.empty()) return {};
  auto committed = impl_->backend.commit(batch_.writes());
  batch_.clear();
  return committed;
}

void ObjectHost::release_outbox() {
  auto out = std::move(outbox_);
  outbox_.clear();
  for (auto& o : out) {
    if (o.effect && !o.delay) {
      o.effect();
      continue;
    }
    if (o.effect) {
      // A timer: its effect comes back as a continuation, so it runs as a turn.
      std::uint64_t id = next_continuation_++;
      continuations_.emplace(id, [effect = std::move(o.effect)](caf::expected<caf::message>) {
        effect();
      });
      delayed_send(this, *o.delay, ContinuationReply{id, caf::message{}});
      continue;
    }
    if (!o.then) {
      runtime_->deliver(o.to, std::move(o.msg), nullptr);
      continue;
    }
    std::uint64_t id = next_continuation_++;
    continuations_.emplace(id, std::move(o.then));
    // A weak address: a pending reply must not keep a stopped activation alive.
    caf::actor_addr self = address();
    runtime_->deliver(o.to, std::move(o.msg), [self, id](caf::expected<caf::message> r) {
      if (auto me = caf::actor_cast<caf::actor>(self)) {
        caf::anon_send(me, ContinuationReply{id, std::move(r)});
      }
    });
  }
}

void ObjectHost::reset(const caf::error& why) {
  resetting_ = true;
  auto reason = describe(why);
  log::warn("object_reset", {{"ns", id_.ns()}, {"id", id_.to_string()}, {"reason", reason}});
  auto span = start_span(trace::kResetSpan, trace_);
  span.set_attribute(trace::attr::kResetReason, reason);
  span.record_exception("dorm.ObjectReset", reason);
  span.end();
  // New messages go to a fresh activation from now on; the ones still in this mailbox are
  // dropped with it, and their reply sinks answer object_reset.
  impl_->end(id_, activation_.get(), StartReason::after_reset);
  quit(why);
}

trace::Span ObjectHost::start_span(std::string_view name, std::optional<trace::TraceContext> parent,
                                   std::vector<trace::SpanLink> links) {
  auto* tracer = impl_->options.tracer;
  if (!tracer) return {};
  trace::SpanOptions options;
  options.parent = std::move(parent);
  options.links = std::move(links);
  options.attributes = {
      {trace::attr::kNamespace, id_.ns()},
      {trace::attr::kObjectId, id_.to_string()},
      {trace::attr::kEpochGeneration, static_cast<std::int64_t>(epoch_.generation)},
      {trace::attr::kEpochActivation, static_cast<std::int64_t>(epoch_.activation)},
  };
  return tracer->start_span(std::string(name), std::move(options));
}

Result<void> ObjectHost::fail_turn(Error error) {
  if (!turn_error_) turn_error_ = error;
  return error;
}

Result<void> ObjectHost::check_write(std::size_t key_bytes, std::size_t value_bytes) {
  const auto& limits = impl_->options.limits;
  // One key or value over its limit is the caller's input: refused, nothing written, and
  // the turn goes on, so the caller can answer with a clear error (a tool that stores too
  // much gets an error result; its session is not reset). The batch's totals are the
  // turn's own: over them, the turn cannot commit as a whole, so it fails
  // (docs/architecture.md#errors).
  if (key_bytes > limits.max_key_bytes) return limit_error("key", key_bytes, limits.max_key_bytes);
  if (value_bytes > limits.max_value_bytes) {
    return limit_error("value", value_bytes, limits.max_value_bytes);
  }
  if (batch_.entries() + 1 > limits.max_batch_entries) {
    return fail_turn(Error{ErrorCode::limit_exceeded,
                           "turn batch of " + std::to_string(batch_.entries() + 1) +
                               " entries exceeds the limit of " +
                               std::to_string(limits.max_batch_entries) + " entries"});
  }
  std::size_t bytes = batch_.bytes() + prefix_.size() + key_bytes + value_bytes;
  if (bytes > limits.max_batch_bytes) {
    return fail_turn(limit_error("turn batch", bytes, limits.max_batch_bytes));
  }
  return {};
}

Result<std::optional<std::string>> ObjectHost::get(std::string_view key) {
  if (!in_turn()) return outside_turn();
  if (key.size() > impl_->options.limits.max_key_bytes) {
    return limit_error("key", key.size(), impl_->options.limits.max_key_bytes);
  }
  return batch_.get(full_key(key));
}

Result<std::vector<std::optional<std::string>>> ObjectHost::get_many(
    std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (const auto& k : keys) {
    auto v = get(k);
    if (!v) return std::move(v).error();
    out.push_back(std::move(*v));
  }
  return out;
}

Result<void> ObjectHost::put(std::string_view key, std::string_view value) {
  if (!in_turn()) return outside_turn();
  if (auto ok = check_write(key.size(), value.size()); !ok) return ok;
  batch_.put(full_key(key), std::string(value));
  return {};
}

Result<bool> ObjectHost::del(std::string_view key) {
  auto existing = get(key);
  if (!existing) return std::move(existing).error();
  if (auto ok = check_write(key.size(), 0); !ok) return std::move(ok).error();
  batch_.del(full_key(key));
  return existing->has_value();
}

Result<std::vector<storage::KeyValue>> ObjectHost::list(const ListOptions& options) {
  if (!in_turn()) return outside_turn();
  // The object's own range, narrowed by the prefix and then by start/end.
  std::string lower = prefix_ + options.prefix;
  std::optional<std::string> upper = storage::ScanOptions::prefix_successor(lower);
  if (options.start && prefix_ + *options.start > lower) lower = prefix_ + *options.start;
  if (options.end) {
    std::string end = prefix_ + *options.end;
    if (!upper || end < *upper) upper = end;
  }
  storage::ScanOptions scan;
  scan.start = lower;
  scan.end = upper;
  if (scan.end && *scan.end < scan.start) scan.end = scan.start;  // an empty range
  if (options.start_after) scan.start_after = prefix_ + *options.start_after;
  scan.reverse = options.reverse;
  scan.limit = options.limit;
  auto rows = batch_.scan(scan);
  if (!rows) return std::move(rows).error();
  for (auto& kv : *rows) kv.key.erase(0, prefix_.size());
  return rows;
}

Result<void> ObjectHost::delete_all() {
  if (!in_turn()) return outside_turn();
  if (auto ok = check_write(0, 0); !ok) return ok;
  // Alarms first: their index entries live outside the object's prefix.
  std::string alarms = root_ + keys::kObjectAlarm;
  auto records = batch_.scan(storage::ScanOptions::with_prefix(alarms));
  if (!records) return fail_turn(std::move(records).error());
  for (auto& kv : *records) {
    auto record = decode_record(kv.value);
    if (record) remove_alarm(std::string_view(kv.key).substr(alarms.size()), *record);
  }
  batch_.delete_range(root_, *storage::ScanOptions::prefix_successor(root_));
  return {};
}

Result<void> ObjectHost::commit_early() {
  if (!in_turn() || phase_ != Phase::starting) {
    return Error{ErrorCode::invalid_argument, "commit() is only allowed in on_start"};
  }
  if (turn_error_) return *turn_error_;
  auto committed = commit_batch();
  if (!committed) {
    outbox_.clear();
    return fail_turn(committed.error());
  }
  release_outbox();
  return {};
}

Result<void> ObjectHost::index_put(std::string_view index, std::string_view key,
                                   std::string_view value) {
  if (!in_turn()) return outside_turn();
  if (!keys::valid_user_index(index)) {
    return fail_turn(Error{ErrorCode::invalid_argument,
                           "invalid index name '" + std::string(index) +
                               "': use 1-64 of [a-z0-9._-], not starting with 'dorm.'"});
  }
  if (auto ok = check_write(key.size(), value.size()); !ok) return ok;
  batch_.put(keys::index_entry(index, key), std::string(value));
  return {};
}

Result<void> ObjectHost::index_del(std::string_view index, std::string_view key) {
  if (!in_turn()) return outside_turn();
  if (!keys::valid_user_index(index)) {
    return fail_turn(Error{ErrorCode::invalid_argument,
                           "invalid index name '" + std::string(index) +
                               "': use 1-64 of [a-z0-9._-], not starting with 'dorm.'"});
  }
  if (auto ok = check_write(key.size(), 0); !ok) return ok;
  batch_.del(keys::index_entry(index, key));
  return {};
}

void ObjectHost::send_message(const ObjectHandle& to, caf::message msg) {
  outbox_.push_back(Outgoing{to, std::move(msg), {}, {}, std::nullopt});
  if (!in_turn()) release_outbox();
}

void ObjectHost::after_commit(std::function<void()> effect) {
  outbox_.push_back(Outgoing{{}, {}, {}, std::move(effect), std::nullopt});
  if (!in_turn()) release_outbox();
}

void ObjectHost::after(std::chrono::milliseconds delay, std::function<void()> then) {
  outbox_.push_back(Outgoing{{}, {}, {}, std::move(then), delay});
  if (!in_turn()) release_outbox();
}

void ObjectHost::adopt(const caf::actor& actor, std::function<void()> on_down) {
  if (!actor) return;
  adopted_[actor.address()] = std::move(on_down);
  monitor(actor);
}

void ObjectHost::request_message(const ObjectHandle& to, caf::message msg,
                                 DurableObject::Continuation then) {
  outbox_.push_back(Outgoing{to, std::move(msg), std::move(then), {}, std::nullopt});
  if (!in_turn()) release_outbox();
}

}  // namespace dorm::detail
