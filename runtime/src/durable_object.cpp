#include "dorm/runtime/durable_object.hpp"

#include <utility>

#include "object_host.hpp"

namespace dorm {

const char* to_string(StartReason r) {
  switch (r) {
    case StartReason::first: return "first";
    case StartReason::wake: return "wake";
    case StartReason::after_reset: return "after_reset";
    case StartReason::after_crash: return "after_crash";
    case StartReason::after_shutdown: return "after_shutdown";
    case StartReason::after_redeploy: return "after_redeploy";
  }
  return "unknown";
}

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::idle: return "idle";
    case StopReason::budget: return "budget";
    case StopReason::drain: return "drain";
    case StopReason::shutdown: return "shutdown";
  }
  return "unknown";
}

namespace {

// Runs `use` on the activation's storage; outside a turn, the host's error instead.
template <class Use>
auto with_storage(detail::ObjectHost* host, Use&& use) -> decltype(use(std::declval<detail::ObjectStorage&>())) {
  auto storage = host->storage();
  if (!storage) return std::move(storage).error();
  return use(**storage);
}

}  // namespace

Result<std::optional<std::string>> DurableObject::get(std::string_view key) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.get(key); });
}

Result<std::vector<std::optional<std::string>>> DurableObject::get_many(
    std::span<const std::string> keys) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.get_many(keys); });
}

Result<void> DurableObject::put(std::string_view key, std::string_view value) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.put(key, value); });
}

Result<void> DurableObject::put_many(std::span<const std::pair<std::string, std::string>> entries) {
  for (const auto& [k, v] : entries) {
    if (auto ok = put(k, v); !ok) return ok;
  }
  return {};
}

Result<bool> DurableObject::del(std::string_view key) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.del(key); });
}

Result<std::size_t> DurableObject::del_many(std::span<const std::string> keys) {
  std::size_t existed = 0;
  for (const auto& k : keys) {
    auto r = del(k);
    if (!r) return std::move(r).error();
    existed += *r ? 1 : 0;
  }
  return existed;
}

Result<std::vector<storage::KeyValue>> DurableObject::list(const ListOptions& options) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.list(options); });
}

Result<void> DurableObject::delete_all() {
  return with_storage(host_, [](detail::ObjectStorage& s) { return s.delete_all(); });
}

Result<void> DurableObject::commit() { return host_->commit_early(); }

Result<void> DurableObject::check_storage_space() const { return host_->check_storage_space(); }

Result<void> DurableObject::set_alarm(std::string_view name, std::int64_t due_ms) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.set_alarm(name, due_ms); });
}

Result<std::optional<std::int64_t>> DurableObject::get_alarm(std::string_view name) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.get_alarm(name); });
}

Result<bool> DurableObject::delete_alarm(std::string_view name) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.delete_alarm(name); });
}

Result<void> DurableObject::index_put(std::string_view index, std::string_view key,
                                      std::string_view value) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.index_put(index, key, value); });
}

Result<void> DurableObject::index_del(std::string_view index, std::string_view key) {
  return with_storage(host_, [&](detail::ObjectStorage& s) { return s.index_del(index, key); });
}

Lease::Lease(detail::ActivationRef activation) : activation_(std::move(activation)) {
  activation_->leases.fetch_add(1);
}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    activation_ = std::move(other.activation_);
  }
  return *this;
}

void Lease::release() {
  if (activation_) activation_->leases.fetch_sub(1);
  activation_.reset();
}

Lease DurableObject::keep_alive() { return host_->keep_alive(); }
void DurableObject::dispose() { host_->request_dispose(/*remember=*/true); }
void DurableObject::dispose_empty() { host_->request_dispose(/*remember=*/false); }

const ObjectId& DurableObject::id() const { return host_->id(); }
Epoch DurableObject::epoch() const { return host_->epoch(); }
Runtime& DurableObject::runtime() const { return host_->runtime(); }
const Clock& DurableObject::clock() const { return host_->clock(); }

trace::Span DurableObject::start_span(std::string_view name) {
  return host_->start_child_span(name);
}

void DurableObject::send_message(const ObjectHandle& to, caf::message msg) {
  host_->send_message(to, std::move(msg));
}

void DurableObject::request_message(const ObjectHandle& to, caf::message msg, Continuation then) {
  host_->request_message(to, std::move(msg), std::move(then));
}

void DurableObject::after_commit(std::function<void()> effect) {
  host_->after_commit(std::move(effect));
}

void DurableObject::after(std::chrono::milliseconds delay, std::function<void()> then) {
  host_->after(delay, std::move(then));
}

Inbox DurableObject::inbox() const { return host_->inbox(); }

void Inbox::post(std::function<void()> fn) const {
  if (auto box = box_.lock()) box->post(target_, std::move(fn));
}

caf::actor_system& DurableObject::system() const { return host_->home_system(); }

void DurableObject::adopt(const caf::actor& actor, std::function<void()> on_down) {
  host_->adopt(actor, std::move(on_down));
}

void DurableObject::tell_helper(const caf::actor& helper, caf::message msg) {
  host_->tell_helper(helper, std::move(msg));
}

}  // namespace dorm
