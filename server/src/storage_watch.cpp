#include "storage_watch.hpp"

#include "dorm/runtime/log.hpp"

namespace dorm::server {
namespace {

constexpr const char* kUnreadyReason =
    "storage full: writes are refused until space is freed on the store's disk "
    "(reads and resumes still work)";

std::int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SpaceReport::Action SpaceReport::observe(bool full, std::int64_t now_ms) {
  if (!full) {
    if (!full_since_) return Action::none;
    full_since_.reset();
    unlogged_ = 0;
    return Action::recovered;
  }
  if (!full_since_) {
    full_since_ = now_ms;
    logged_at_ = now_ms;
    unlogged_ = 0;
    return Action::became_full;
  }
  if (now_ms - logged_at_ >= kLogInterval.count()) {
    logged_at_ = now_ms;
    return Action::still_full_log;
  }
  ++unlogged_;
  return Action::none;
}

StorageWatch::StorageWatch(storage::Backend& store, mcp::HttpServer& server)
    : store_(store), server_(server), thread_([this] { run(); }) {}

StorageWatch::~StorageWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StorageWatch::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    look();
    lock.lock();
    cv_.wait_for(lock, kInterval, [this] { return stopping_; });
  }
}

void StorageWatch::look() {
  auto now = monotonic_ms();
  auto room = store_.check_space();
  const bool full = !room && room.error().code == ErrorCode::no_space;
  if (!room && !full && now - error_logged_at_ >= SpaceReport::kLogInterval.count()) {
    // Not a full disk (a store that cannot resume after an I/O error, say): said, at
    // most as often as a full disk is.
    error_logged_at_ = now;
    log::error("storage_check_failed",
               {{"storage", store_.describe()}, {"error", room.error().describe()}});
  }
  const std::uint64_t skipped = report_.unlogged();
  const std::int64_t was_full_for = report_.full_for(now);
  switch (report_.observe(full, now)) {
    case SpaceReport::Action::none: break;
    case SpaceReport::Action::became_full:
      server_.set_unready_reason(kUnreadyReason);
      [[fallthrough]];
    case SpaceReport::Action::still_full_log:
      log::warn("storage_no_space", {{"storage", store_.describe()},
                                     {"error", room.error().message},
                                     {"full_ms", report_.full_for(now)},
                                     {"checks_since_last_line", skipped}});
      break;
    case SpaceReport::Action::recovered:
      server_.set_unready_reason({});
      log::info("storage_space_recovered", {{"storage", store_.describe()}, {"full_ms", was_full_for}});
      break;
  }
}

}  // namespace dorm::server
