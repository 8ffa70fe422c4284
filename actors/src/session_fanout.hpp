// Sends one message to every session the in-flight index (`mcp.inflight`) names: the boot
// reaper wakes them, a draining server stops their calls. Internal to actors/.
#pragma once

#include <caf/message.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct FanoutReport {
  std::size_t records = 0;   // index entries read
  std::size_t sessions = 0;  // distinct sessions sent the message
  std::size_t failed = 0;    // malformed entries, and sessions that did not answer
  std::vector<std::string> errors;  // up to a few, for the log
};

// Sends `message` to each session named in the index, at most `parallel` at a time,
// passes every answer to `on_reply` (serialised: never two at once), and calls `done` once
// each has answered or failed, on whichever thread finished last. Errors: reading the
// index (then `done` is not called). The sessions namespace must be registered.
Result<void> fan_out_to_inflight_sessions(Runtime& runtime, caf::message message,
                                          std::function<void(const caf::message&)> on_reply,
                                          std::function<void(FanoutReport)> done,
                                          std::size_t parallel);

// The number of entries in the in-flight index: tool calls running (or left by a dead
// process and not reaped yet). Errors: the store's.
Result<std::size_t> count_inflight_records(Runtime& runtime);

}  // namespace dorm::actors
