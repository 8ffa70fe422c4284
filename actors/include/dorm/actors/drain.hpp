// Graceful drain (docs/mcp.md#graceful-drain): what a server that is stopping for a deploy
// does with the tool calls still running once its drain window has passed. Each session
// the in-flight index names is told to stop (mcp::SessionDrain): every call it still runs
// gets the reaper's -32001 error with reason `server_draining`, stored in the batch that
// deletes the call's journal record and sent on its live stream at once, and the session's
// open SSE connections end cleanly. A successor therefore reaps nothing the drain answered,
// and a client resuming against it finds the error in the stream's log.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct DrainReport {
  std::size_t sessions = 0;  // sessions told to stop their calls
  std::size_t calls = 0;     // calls they stopped and answered
  std::size_t failed = 0;    // sessions that did not answer (their calls are reaped at the next start)
  std::vector<std::string> errors;  // up to a few, for the log
};

// Tool calls running now: the entries of the in-flight index (the sessions namespace must
// be registered). Errors: the store's.
Result<std::size_t> running_calls(Runtime& runtime);

// Stops every running call as described above, waiting at most `bound` for the sessions'
// answers. Real threads only (not on virtual time). Errors: reading the index, or
// unavailable naming how long it waited.
Result<DrainReport> drain_running_calls(Runtime& runtime, std::chrono::milliseconds bound);

}  // namespace dorm::actors
