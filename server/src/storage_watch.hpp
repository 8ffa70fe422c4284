// StorageWatch: a server (dorm/server/server.hpp) looks at its store's free space once a
// second, so that a full disk shows where operators look: `/readyz` answers 503 saying
// storage is full (load balancers stop sending new work; `/healthz` stays 200, the
// process is fine), the log says `storage_no_space` (at most every kLogInterval while it
// lasts) and `storage_space_recovered` when it clears. Each look is
// Backend::check_space(), which for RocksDB also resumes a database a full disk stopped,
// once the reserve is free.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "dorm/mcp/http_server.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::server {

// What to do after one look, as a pure function of the time and what was seen, so the
// logging rule is tested without threads or a real clock.
class SpaceReport {
 public:
  static constexpr std::chrono::milliseconds kLogInterval{10'000};

  enum class Action { none, became_full, still_full_log, recovered };
  // `full`: check_space() answered no_space at `now_ms` (monotonic).
  Action observe(bool full, std::int64_t now_ms);
  // How long the store has been full, at `now_ms`; 0 when it is not.
  std::int64_t full_for(std::int64_t now_ms) const { return full_since_ ? now_ms - *full_since_ : 0; }
  // How many looks found it full since the last line logged.
  std::uint64_t unlogged() const { return unlogged_; }

 private:
  std::optional<std::int64_t> full_since_;
  std::int64_t logged_at_ = 0;
  std::uint64_t unlogged_ = 0;
};

class StorageWatch {
 public:
  static constexpr std::chrono::milliseconds kInterval{1000};

  // Starts looking at `store` every kInterval; both must outlive this object.
  StorageWatch(storage::Backend& store, mcp::HttpServer& server);
  // Stops and joins the thread.
  ~StorageWatch();

  StorageWatch(const StorageWatch&) = delete;
  StorageWatch& operator=(const StorageWatch&) = delete;

 private:
  void run();
  void look();

  storage::Backend& store_;
  mcp::HttpServer& server_;
  SpaceReport report_;
  std::int64_t error_logged_at_ = -SpaceReport::kLogInterval.count();
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dorm::server
