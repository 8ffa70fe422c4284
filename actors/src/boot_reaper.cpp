#include "dorm/actors/boot_reaper.hpp"

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <set>

#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/runtime/errors.hpp"

namespace dorm::actors {
namespace {

constexpr std::size_t kScanPage = 1024;
constexpr std::size_t kMaxErrors = 5;

// The wakes in flight and what is left to send; shared by every reply handler.
struct BootWake {
  Runtime* runtime = nullptr;
  std::vector<ObjectId> pending;  // not sent yet, in index order
  std::size_t next = 0;
  std::size_t outstanding = 0;
  BootReapReport report;
  std::function<void(BootReapReport)> done;
  std::mutex mutex;

  // Sends wakes while fewer than `parallel` are out; calls `done` after the last reply.
  static void pump(const std::shared_ptr<BootWake>& self, std::size_t parallel) {
    std::vector<ObjectId> batch;
    std::function<void(BootReapReport)> finish;
    {
      std::lock_guard lock(self->mutex);
      while (self->outstanding < parallel && self->next < self->pending.size()) {
        batch.push_back(self->pending[self->next++]);
        ++self->outstanding;
      }
      if (batch.empty() && self->outstanding == 0 && self->done) finish = std::move(self->done);
    }
    if (finish) return finish(std::move(self->report));
    for (auto& id : batch) {
      auto handle = self->runtime->get(id);
      if (!handle) {
        reply(self, parallel, handle.error().describe());
        continue;
      }
      self->runtime->request(*handle, [self, parallel](caf::expected<caf::message> r) {
        reply(self, parallel, r ? std::string() : describe(r.error()));
      }, mcp::SessionWake{});
    }
  }

  static void reply(const std::shared_ptr<BootWake>& self, std::size_t parallel, std::string error) {
    {
      std::lock_guard lock(self->mutex);
      --self->outstanding;
      if (!error.empty()) {
        ++self->report.failed;
        if (self->report.errors.size() < kMaxErrors) self->report.errors.push_back(std::move(error));
      }
    }
    pump(self, parallel);
  }
};

}  // namespace

Result<void> reap_at_boot(Runtime& runtime, std::function<void(BootReapReport)> done,
                          std::size_t parallel) {
  auto wake = std::make_shared<BootWake>();
  wake->runtime = &runtime;
  wake->done = std::move(done);
  // Index keys are <session object id>/<request key>: one wake per distinct session.
  std::set<std::string> seen;
  std::string start;
  for (;;) {
    auto page = runtime.scan_index(mcp::kInflightIndex, start, kScanPage);
    if (!page) return std::move(page).error();
    for (const auto& kv : *page) {
      ++wake->report.records;
      auto entry = mcp::parse_inflight_entry(kv.key);
      if (!entry) {
        ++wake->report.failed;
        if (wake->report.errors.size() < kMaxErrors) {
          wake->report.errors.push_back("index entry '" + kv.key + "' is malformed");
        }
        continue;
      }
      if (!seen.insert(entry->session_object_id).second) continue;
      auto id = runtime.parse_id(kMcpSessionNamespace, entry->session_object_id);
      if (!id) {
        ++wake->report.failed;
        if (wake->report.errors.size() < kMaxErrors) {
          wake->report.errors.push_back("index entry '" + kv.key + "': " + id.error().describe());
        }
        continue;
      }
      wake->pending.push_back(std::move(*id));
    }
    if (page->size() < kScanPage) break;
    start = page->back().key + '\0';  // the next key after the last one read
  }
  wake->report.sessions = wake->pending.size();
  BootWake::pump(wake, parallel < 1 ? 1 : parallel);
  return {};
}

Result<BootReapReport> reap_at_boot_blocking(Runtime& runtime, std::chrono::milliseconds bound) {
  auto result = std::make_shared<std::promise<BootReapReport>>();
  auto future = result->get_future();
  if (auto ok = reap_at_boot(runtime, [result](BootReapReport r) { result->set_value(std::move(r)); }); !ok) {
    return std::move(ok).error();
  }
  if (future.wait_for(bound) != std::future_status::ready) {
    return Error{ErrorCode::unavailable, "sessions still reaping after " +
                                             std::to_string(bound.count()) + " ms"};
  }
  return future.get();
}

}  // namespace dorm::actors
