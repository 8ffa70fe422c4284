#include "graceful_stop.hpp"

#include <algorithm>
#include <thread>

#include "dorm/actors/drain.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::server {

std::size_t let_calls_finish(Runtime& runtime, std::chrono::steady_clock::time_point deadline,
                             StopRequests& stop) {
  for (bool first = true;; first = false) {
    auto running = actors::running_calls(runtime);
    if (!running) {
      log::error("drain_failed", {{"error", running.error().describe()}});
      return 0;
    }
    auto left = deadline - std::chrono::steady_clock::now();
    if (first) {
      log::info("drain_started",
                {{"running_calls", static_cast<std::int64_t>(*running)},
                 {"drain_timeout_ms",
                  std::chrono::duration_cast<std::chrono::milliseconds>(left).count()}});
    }
    if (*running == 0 || left <= left.zero()) return *running;
    auto step = std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50));
    if (stop.wait_for_second(std::chrono::ceil<std::chrono::milliseconds>(step))) {
      return *running;
    }
  }
}

void stop_running_calls(Runtime& runtime, mcp::HttpServer& srv, std::chrono::milliseconds bound) {
  auto drained = actors::drain_running_calls(runtime, bound);
  if (!drained) {
    log::error("drain_failed", {{"error", drained.error().describe()}});
  } else {
    log::info("drain_stopped_calls", {{"calls", static_cast<std::int64_t>(drained->calls)},
                                      {"sessions", static_cast<std::int64_t>(drained->sessions)},
                                      {"failed", static_cast<std::int64_t>(drained->failed)}});
    for (const auto& e : drained->errors) log::warn("drain_session_failed", {{"error", e}});
  }
  auto until = answer_accepted(srv, bound);
  // Answered streams end on their own and their connections close (the server drains);
  // give their last bytes the rest of the moment to go out, then close whatever is left.
  while (srv.open_connections() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (auto left = srv.open_connections(); left > 0) {
    log::info("closing_connections", {{"connections", static_cast<std::int64_t>(left)}});
  }
  srv.close_connections();
}

std::chrono::steady_clock::time_point answer_accepted(mcp::HttpServer& srv,
                                                      std::chrono::milliseconds bound) {
  auto until = std::chrono::steady_clock::now() + std::min(bound, kAnswerAcceptedWait);
  if (!srv.finish_accepted(until)) {
    log::warn("requests_unanswered_at_stop",
              {{"requests", static_cast<std::int64_t>(srv.unanswered_requests())}});
  }
  return until;
}

}  // namespace dorm::server
