// Steps (b), (c) and the end of a server's graceful stop (docs/mcp.md#graceful-drain); step (a),
// the HTTP server's drain, is begin_drain at the first stop request, and (d) stops the
// runtime.
#pragma once

#include <chrono>
#include <cstddef>

#include "dorm/mcp/http_server.hpp"
#include "dorm/runtime/runtime.hpp"
#include "stop_control.hpp"

namespace dorm::server {

// (b) Running calls go on until none is left, `deadline` passes or a second stop request
// comes. Returns how many are still running (0 when unknown: the failure is logged).
std::size_t let_calls_finish(Runtime& runtime, std::chrono::steady_clock::time_point deadline,
                             StopRequests& stop);

// (c) The calls still running are stopped and answered with the server_draining error,
// which goes out on their live streams; connections then close. Waits at most `bound`
// for the sessions, and a second at most for the last bytes to go out.
void stop_running_calls(Runtime& runtime, mcp::HttpServer& srv, std::chrono::milliseconds bound);

// Before the connections close, with or without (c): the listener closes (what the
// kernel queued at it is accepted) and every request accepted so far is answered,
// waiting at most `bound` or kAnswerAcceptedWait, whichever is shorter
// (HttpServer::finish_accepted; a miss is logged). A client that connected just before
// the stop (a readiness probe, a new session's first POST) gets its answer, not a reset.
// Returns the end of that wait.
constexpr std::chrono::milliseconds kAnswerAcceptedWait{1'000};
std::chrono::steady_clock::time_point answer_accepted(mcp::HttpServer& srv,
                                                      std::chrono::milliseconds bound);

}  // namespace dorm::server
