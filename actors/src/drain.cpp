#include "dorm/actors/drain.hpp"

#include <future>
#include <memory>

#include "dorm/mcp/session_call.hpp"
#include "session_fanout.hpp"

namespace dorm::actors {

Result<std::size_t> running_calls(Runtime& runtime) { return count_inflight_records(runtime); }

Result<DrainReport> drain_running_calls(Runtime& runtime, std::chrono::milliseconds bound) {
  auto stopped = std::make_shared<std::size_t>(0);  // replies are serialised by the fan-out
  auto result = std::make_shared<std::promise<DrainReport>>();
  auto future = result->get_future();
  auto sent = fan_out_to_inflight_sessions(
      runtime, caf::make_message(mcp::SessionDrain{}),
      [stopped](const caf::message& reply) {
        if (reply.match_elements<std::uint64_t>()) *stopped += reply.get_as<std::uint64_t>(0);
      },
      [stopped, result](FanoutReport r) {
        result->set_value(DrainReport{r.sessions, *stopped, r.failed, std::move(r.errors)});
      },
      64);
  if (!sent) return std::move(sent).error();
  if (future.wait_for(bound) != std::future_status::ready) {
    return Error{ErrorCode::unavailable, "sessions still stopping their calls after " +
                                             std::to_string(bound.count()) + " ms"};
  }
  return future.get();
}

}  // namespace dorm::actors
