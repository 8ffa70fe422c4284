#include "dorm/actors/boot_reaper.hpp"

#include <future>
#include <memory>

#include "dorm/mcp/session_call.hpp"
#include "session_fanout.hpp"

namespace dorm::actors {

Result<void> reap_at_boot(Runtime& runtime, std::function<void(BootReapReport)> done,
                          std::size_t parallel) {
  return fan_out_to_inflight_sessions(
      runtime, caf::make_message(mcp::SessionWake{}), nullptr,
      [done = std::move(done)](FanoutReport r) {
        done(BootReapReport{r.records, r.sessions, r.failed, std::move(r.errors)});
      },
      parallel);
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
