#include "alarm_scheduler.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::detail {

AlarmScheduler::AlarmScheduler(caf::actor_config& cfg, Runtime* runtime, Runtime::Impl* impl)
    : caf::event_based_actor(cfg),
      runtime_(runtime),
      impl_(impl),
      window_(impl->options.alarm_window),
      rng_(impl->options.seed) {}

caf::behavior AlarmScheduler::make_behavior() {
  tick();  // the window is empty, its horizon the start of the index: this reads a page
  // Scale-out: other nodes set alarms this one is never told of. Once a lease period it
  // reads the index again from the start, so a dead node's alarms are delivered here once
  // its leases ran out (delivering one another node holds is put off, not failed).
  const bool node = impl_->leases != nullptr;
  if (node) delayed_send(this, impl_->options.node.lease, AlarmRescan{});
  return {
      [this](AlarmRescan) {
        window_.restart();
        tick();
        delayed_send(this, impl_->options.node.lease, AlarmRescan{});
      },
      [this](const AlarmTick& t) {
        if (t.version != timer_version_) return;  // re-armed since: stale
        armed_ms_.reset();
        tick();
      },
      [this](AlarmDue) {
        tick_pending_ = false;
        tick();
      },
      [this](const AlarmChanged& c) { changed(c); },
      [this](const AlarmDone& d) { done(d); },
      [this](const NamespaceAdded& a) { release_held(a.ns); },
  };
}

bool AlarmScheduler::set_before_start(std::string_view version) const {
  // Versions are "<generation>.<activation>.<sequence>": one set by this runtime carries
  // its generation, and a time in the past it was given must fire at once, not wait for
  // the overdue rate.
  return !version.starts_with(std::to_string(impl_->generation) + ".");
}

std::int64_t AlarmScheduler::jittered_delay_ms(int failed_attempt) {
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  return static_cast<std::int64_t>(static_cast<double>(alarm_retry_base_ms(failed_attempt)) *
                                   jitter(rng_));
}

void AlarmScheduler::tick_soon() {
  if (std::exchange(tick_pending_, true)) return;
  send(this, AlarmDue{});
}

// A committed change costs the window O(log n) and no store access; only a set that is
// due already asks for a tick, and those are coalesced into one.
void AlarmScheduler::changed(const AlarmChanged& c) {
  std::optional<std::int64_t> earliest;
  bool malformed = false;
  for (const auto& change : c.changes) {
    // A commit that reported failure may have been applied all the same: keep what it
    // deleted (delivering a deleted alarm is a stale delivery the object ignores) and
    // take what it set (not delivering a stored one would break at-least-once).
    if (!change.version && !c.certain) continue;
    window_.apply(change);
    if (!change.version || !window_.entries().contains(change.index_key)) continue;
    auto due = decode_due(change.index_key);
    if (!due) malformed = true;
    if (due && (!earliest || *due < *earliest)) earliest = due;
  }
  if (malformed || (earliest && *earliest <= impl_->clock->now_ms())) {
    tick_soon();
  } else {
    arm(earliest);
  }
}

void AlarmScheduler::tick() {
  const std::int64_t now = impl_->clock->now_ms();
  std::optional<std::int64_t> next;
  auto consider = [&](std::int64_t at) { next = next ? std::min(*next, at) : at; };

  // Retries that are due go out first; they are not subject to the overdue rate.
  for (auto it = retries_.begin(); it != retries_.end();) {
    if (it->second.at_ms <= now) {
      std::string key = it->first;
      Delivery d = it->second.delivery;
      it = retries_.erase(it);
      if (d.elsewhere && !still_stored(key, d.version)) continue;  // its owner delivered it
      deliver(key, std::move(d));
    } else {
      consider(it->second.at_ms);
      ++it;
    }
  }

  for (;;) {
    Pass pass = deliver_due(now);
    if (pass.next) consider(*pass.next);
    auto horizon = window_.horizon_due();
    if (!pass.exhausted || !horizon) break;
    if (*horizon > now) {
      consider(*horizon);
      break;
    }
    // Everything the window holds went out, and the index may hold more that is due. With
    // no room (the window is full of entries already in flight), the next AlarmDone ticks.
    if (window_.room() == 0) break;
    auto read = refill();
    if (read == Read::fenced) return;
    if (read == Read::failed) {
      consider(now + 1000);  // try again in a second
      break;
    }
  }
  publish_late(now);
  arm(next);
}

// Runs after each tick and each finished delivery: between them nothing becomes late
// without a tick (the timer is armed for the earliest due entry), except what the overdue
// rate holds back, which the next release's tick counts again.
void AlarmScheduler::publish_late(std::int64_t now) {
  std::uint64_t late = retries_.size() + held_count_;
  for (const auto& [index_key, version] : window_.entries()) {
    auto due = decode_due(index_key);
    if (due && *due > now) break;
    if (!inflight_.contains(index_key) && !retries_.contains(index_key)) ++late;
  }
  impl_->alarms_late.store(late, std::memory_order_relaxed);
}

AlarmScheduler::Pass AlarmScheduler::deliver_due(std::int64_t now) {
  Pass pass;
  const auto rate = static_cast<std::int64_t>(impl_->options.overdue_alarm_rate);
  std::int64_t allowed = rate > 0 ? (now - impl_->started_ms) * rate / 1000 - released_overdue_
                                  : std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> malformed;
  std::vector<std::pair<std::string, Delivery>> due;
  std::vector<std::pair<std::string, Delivery>> hold;
  for (const auto& [index_key, version] : window_.entries()) {
    auto key = decode_index_key(index_key);
    if (!key) {
      log::error("alarm_index_entry_malformed");
      malformed.push_back(index_key);
      continue;
    }
    if (key->due_ms > now) {
      pass.next = key->due_ms;
      pass.exhausted = false;
      break;
    }
    // Another version of an alarm in flight (or waiting for a retry): after that one.
    if (inflight_.contains(index_key) || retries_.contains(index_key)) continue;
    if (held_count_ + hold.size() < impl_->options.alarm_window &&
        impl_->hold_alarm_if_unregistered(key->ns)) {
      hold.emplace_back(index_key, Delivery{*key, version, 1, false});
      continue;
    }
    if (rate > 0 && key->due_ms < impl_->started_ms && set_before_start(version)) {
      if (allowed <= 0) {
        // The next overdue release: when the rate allows one more.
        pass.next = impl_->started_ms + ((released_overdue_ + 1) * 1000 + rate - 1) / rate;
        pass.exhausted = false;
        break;
      }
      --allowed;
      ++released_overdue_;
    }
    due.emplace_back(index_key, Delivery{*key, version, 1, false});
  }
  for (const auto& key : malformed) window_.erase(key);
  for (auto& [key, delivery] : hold) {
    // Out of the window, as an alarm in flight is: the window's horizon is past it, so no
    // refill reads it again.
    window_.erase(key);
    held_[delivery.key.ns].emplace_back(key, std::move(delivery));
    ++held_count_;
  }
  for (auto& [key, delivery] : due) deliver(key, std::move(delivery));
  return pass;
}

void AlarmScheduler::release_held(const std::string& ns) {
  auto it = held_.find(ns);
  if (it == held_.end()) return;
  auto entries = std::move(it->second);
  held_.erase(it);
  held_count_ -= entries.size();
  impl_->alarms_held.fetch_sub(entries.size());
  // Back into the window, then a tick: those overdue since before the start still go out
  // at the overdue rate.
  for (auto& [key, delivery] : entries) window_.apply({key, delivery.version});
  tick();
}

AlarmScheduler::Read AlarmScheduler::refill() {
  const std::size_t limit = window_.room();
  auto page = runtime_->scan_index(keys::kAlarmIndex, *window_.horizon(), limit);
  if (!page) {
    // A fenced store means this runtime crashed under the scan (a simulated crash, or a
    // newer owner took the store): there is nothing to deliver, and nothing wrong to report.
    if (page.error().code == ErrorCode::fenced) return Read::fenced;
    log::error("alarm_index_unreadable", {{"error", page.error().describe()}});
    return Read::failed;
  }
  const bool complete = page->size() < limit;
  window_.fill(std::move(*page), complete);
  return Read::ok;
}

void AlarmScheduler::deliver(const std::string& index_key, Delivery d) {
  // Only this version leaves the window: one set again meanwhile waits for its turn.
  window_.forget(index_key, d.version);
  ObjectId id = impl_->ids->from_body(d.key.ns, d.key.body);
  AlarmInvocation invocation{d.key.name, d.version, d.attempt, d.key.due_ms, d.exhausted};
  inflight_[index_key] = std::move(d);
  caf::actor_addr self = address();
  runtime_->deliver(ObjectHandle{id}, caf::make_message(std::move(invocation)),
                    [self, index_key](caf::expected<caf::message> r) {
                      std::int64_t elsewhere_until = 0;
                      if (!r) {
                        if (auto owner = owner_of(r.error())) elsewhere_until = owner->expires_ms;
                      }
                      if (auto me = caf::actor_cast<caf::actor>(self)) {
                        caf::anon_send(me, AlarmDone{index_key, static_cast<bool>(r),
                                                     elsewhere_until});
                      }
                    });
}

void AlarmScheduler::done(const AlarmDone& result) {
  auto it = inflight_.find(result.index_key);
  if (it == inflight_.end()) return;
  Delivery d = std::move(it->second);
  inflight_.erase(it);
  // Done with this version, whatever follows: a retry is kept in retries_, and a copy a
  // refill read meanwhile must not go out again as a first attempt.
  window_.forget(result.index_key, d.version);
  if (!result.ok && result.elsewhere_until > 0) {
    // Another node holds the object and delivers its alarms. Not a failed attempt: look
    // again when that lease may have run out (a dead holder's alarms are ours then; a
    // delivered one is found deleted, which the object ignores).
    std::int64_t at = std::max(result.elsewhere_until, impl_->clock->now_ms() + 1);
    d.elsewhere = true;
    retries_[result.index_key] = Retry{std::move(d), at};
    arm(at);
  } else if (!result.ok) {
    if (d.exhausted) {
      // The exhausted hook's own turn failed: the alarm stays stored and is delivered
      // again after the next start.
      log::error("alarm_exhausted_hook_failed", {{"ns", d.key.ns}, {"alarm", d.key.name}});
    } else if (d.attempt >= kMaxAlarmAttempts) {
      d.exhausted = true;
      deliver(result.index_key, std::move(d));
    } else {
      std::int64_t at = impl_->clock->now_ms() + jittered_delay_ms(d.attempt);
      d.attempt += 1;
      retries_[result.index_key] = Retry{std::move(d), at};
      arm(at);
    }
  }
  // A version set again while this one was in flight may be due, and a full window may
  // have room for the rest of the index again.
  publish_late(impl_->clock->now_ms());
  tick_soon();
}

bool AlarmScheduler::still_stored(const std::string& index_key, const std::string& version) {
  auto stored = impl_->backend.get(keys::index_entry(keys::kAlarmIndex, index_key));
  // Unreadable: deliver (at least once); the object ignores a stale delivery.
  if (!stored) return stored.error().code != ErrorCode::fenced;
  return *stored && **stored == version;
}

void AlarmScheduler::arm(std::optional<std::int64_t> at_ms) {
  if (!at_ms) return;
  if (armed_ms_ && *armed_ms_ <= *at_ms) return;  // an earlier (or the same) timer is set
  armed_ms_ = at_ms;
  ++timer_version_;
  std::int64_t delay = std::max<std::int64_t>(0, *at_ms - impl_->clock->now_ms());
  delayed_send(this, std::chrono::milliseconds(delay), AlarmTick{timer_version_});
}

}  // namespace dorm::detail
