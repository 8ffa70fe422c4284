#include "alarm_scheduler.hpp"

#include <algorithm>
#include <limits>

#include "dorm/runtime/log.hpp"

namespace dorm::detail {
namespace {
// Index entries read per scan. Most ticks find one or two due entries and stop at the
// first future one, so small pages keep the common case cheap.
constexpr std::size_t kPage = 16;
}

AlarmScheduler::AlarmScheduler(caf::actor_config& cfg, Runtime* runtime, Runtime::Impl* impl)
    : caf::event_based_actor(cfg), runtime_(runtime), impl_(impl), rng_(impl->options.seed) {}

caf::behavior AlarmScheduler::make_behavior() {
  tick();
  return {
      [this](const AlarmTick& t) {
        if (t.version != timer_version_) return;  // re-armed since: stale
        armed_ms_.reset();
        tick();
      },
      [this](const AlarmChanged& c) { changed(c); },
      [this](const AlarmDone& d) { done(d); },
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

// A committed alarm set costs no store access unless it is already due: its due time is
// in its index key, so the scheduler only moves its timer earlier when needed. Rescanning
// here made every re-arm step over the deleted entries of all re-arms since the last
// compaction (O(n) per change, O(n^2) under load); the scan now runs only when a timer
// fires, and leaves its cursor past what it stepped over.
void AlarmScheduler::changed(const AlarmChanged& c) {
  if (c.index_key < cursor_) cursor_ = c.index_key;
  auto key = decode_index_key(c.index_key);
  if (!key || key->due_ms <= impl_->clock->now_ms()) {
    tick();
    return;
  }
  arm(key->due_ms);
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
      deliver(key, std::move(d));
    } else {
      consider(it->second.at_ms);
      ++it;
    }
  }

  const auto rate = static_cast<std::int64_t>(impl_->options.overdue_alarm_rate);
  std::int64_t allowed = rate > 0 ? (now - impl_->started_ms) * rate / 1000 - released_overdue_
                                  : std::numeric_limits<std::int64_t>::max();
  bool done = false;
  while (!done) {
    auto page = runtime_->scan_index(keys::kAlarmIndex, cursor_, kPage);
    if (!page) {
      // A fenced store means this runtime crashed under the scan (a simulated crash, or a
      // newer owner took the store): there is nothing to deliver, and nothing wrong to report.
      if (page.error().code == ErrorCode::fenced) return;
      log::error("alarm_index_unreadable", {{"error", page.error().describe()}});
      consider(now + 1000);  // try again in a second
      break;
    }
    for (auto& kv : *page) {
      auto key = decode_index_key(kv.key);
      if (!key) {
        log::error("alarm_index_entry_malformed");
        cursor_ = kv.key + '\0';
        continue;
      }
      if (key->due_ms > now) {
        // Every entry before this one was delivered, is in flight or was skipped, so the
        // next scan may start here. Left behind, the cursor would make every scan step
        // again over the deleted entries of all alarms delivered since the store last
        // compacted them away (at a start, the cursor is the start of the index).
        cursor_ = kv.key;
        consider(key->due_ms);
        done = true;
        break;
      }
      if (!inflight_.count(kv.key) && !retries_.count(kv.key)) {
        if (rate > 0 && key->due_ms < impl_->started_ms && set_before_start(kv.value)) {
          if (allowed <= 0) {
            // The next overdue release: when the rate allows one more.
            consider(impl_->started_ms + ((released_overdue_ + 1) * 1000 + rate - 1) / rate);
            done = true;
            break;
          }
          --allowed;
          ++released_overdue_;
        }
        deliver(kv.key, Delivery{*key, kv.value, 1, false});
      }
      cursor_ = kv.key + '\0';
    }
    if (page->size() < kPage) done = true;
  }
  arm(next);
}

void AlarmScheduler::deliver(const std::string& index_key, Delivery d) {
  ObjectId id = impl_->ids->from_body(d.key.ns, d.key.body);
  AlarmInvocation invocation{d.key.name, d.version, d.attempt, d.key.due_ms, d.exhausted};
  inflight_[index_key] = std::move(d);
  caf::actor_addr self = address();
  runtime_->deliver(ObjectHandle{id}, caf::make_message(std::move(invocation)),
                    [self, index_key](caf::expected<caf::message> r) {
                      if (auto me = caf::actor_cast<caf::actor>(self)) {
                        caf::anon_send(me, AlarmDone{index_key, static_cast<bool>(r)});
                      }
                    });
}

void AlarmScheduler::done(const AlarmDone& result) {
  auto it = inflight_.find(result.index_key);
  if (it == inflight_.end()) return;
  Delivery d = std::move(it->second);
  inflight_.erase(it);
  if (!result.ok) {
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
    }
  }
  tick();
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
