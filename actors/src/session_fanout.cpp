#include "session_fanout.hpp"

#include <memory>
#include <mutex>
#include <set>

#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/runtime/errors.hpp"

namespace dorm::actors {
namespace {

constexpr std::size_t kScanPage = 1024;
constexpr std::size_t kMaxErrors = 5;

// The messages in flight and what is left to send; shared by every reply handler.
struct Fanout {
  Runtime* runtime = nullptr;
  caf::message message;
  std::vector<ObjectId> pending;  // not sent yet, in index order
  std::size_t next = 0;
  std::size_t outstanding = 0;
  FanoutReport report;
  std::function<void(const caf::message&)> on_reply;
  std::function<void(FanoutReport)> done;
  std::mutex mutex;

  void note_error(std::string error) {
    ++report.failed;
    if (report.errors.size() < kMaxErrors) report.errors.push_back(std::move(error));
  }

  // Sends while fewer than `parallel` are out; calls `done` after the last reply.
  static void pump(const std::shared_ptr<Fanout>& self, std::size_t parallel) {
    std::vector<ObjectId> batch;
    std::function<void(FanoutReport)> finish;
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
      self->runtime->deliver(*handle, self->message,
                             [self, parallel](caf::expected<caf::message> r) {
                               if (!r) return reply(self, parallel, describe(r.error()));
                               {
                                 std::lock_guard lock(self->mutex);
                                 if (self->on_reply) self->on_reply(*r);
                               }
                               reply(self, parallel, {});
                             });
    }
  }

  static void reply(const std::shared_ptr<Fanout>& self, std::size_t parallel, std::string error) {
    {
      std::lock_guard lock(self->mutex);
      --self->outstanding;
      if (!error.empty()) self->note_error(std::move(error));
    }
    pump(self, parallel);
  }
};

// Calls `visit` with each index entry, page by page. Errors: the store's.
Result<void> each_inflight_record(Runtime& runtime,
                                  const std::function<void(const storage::KeyValue&)>& visit) {
  std::string start;
  for (;;) {
    auto page = runtime.scan_index(mcp::kInflightIndex, start, kScanPage);
    if (!page) return std::move(page).error();
    for (const auto& kv : *page) visit(kv);
    if (page->size() < kScanPage) return {};
    start = page->back().key + '\0';  // the next key after the last one read
  }
}

}  // namespace

Result<void> fan_out_to_inflight_sessions(Runtime& runtime, caf::message message,
                                          std::function<void(const caf::message&)> on_reply,
                                          std::function<void(FanoutReport)> done,
                                          std::size_t parallel) {
  auto fanout = std::make_shared<Fanout>();
  fanout->runtime = &runtime;
  fanout->message = std::move(message);
  fanout->on_reply = std::move(on_reply);
  fanout->done = std::move(done);
  // Index keys are <session object id>/<request key>: one message per distinct session.
  std::set<std::string> seen;
  auto read = each_inflight_record(runtime, [&](const storage::KeyValue& kv) {
    ++fanout->report.records;
    auto entry = mcp::parse_inflight_entry(kv.key);
    if (!entry) return fanout->note_error("index entry '" + kv.key + "' is malformed");
    if (!seen.insert(entry->session_object_id).second) return;
    auto id = runtime.parse_id(kMcpSessionNamespace, entry->session_object_id);
    if (!id) return fanout->note_error("index entry '" + kv.key + "': " + id.error().describe());
    fanout->pending.push_back(std::move(*id));
  });
  if (!read) return read;
  fanout->report.sessions = fanout->pending.size();
  Fanout::pump(fanout, parallel < 1 ? 1 : parallel);
  return {};
}

Result<std::size_t> count_inflight_records(Runtime& runtime) {
  std::size_t n = 0;
  auto read = each_inflight_record(runtime, [&n](const storage::KeyValue&) { ++n; });
  if (!read) return std::move(read).error();
  return n;
}

}  // namespace dorm::actors
