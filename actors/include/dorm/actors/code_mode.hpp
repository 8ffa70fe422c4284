// Code mode: the `execute` and `resume` tools of an MCP session (docs/code-mode.md).
//
// `execute {code}` runs model-written JavaScript in a sandboxed V8 worker (engine::Pool);
// each `tools.<path>(args)` the code makes runs the registered tool `<path>` as a turn of
// the session, or one of the built-in paths (search, describe.tool, storage.*). A tool
// registered with `requires_approval` first asks a person: inline with
// `elicitation/create` when the client supports it, otherwise the execution *pauses*:
// `execute` answers `waiting_for_interaction` with an execution id, and `resume
// {executionId, action}` continues it.
//
// Paused means cold. A paused execution is a record in the session's storage (the code and
// the engine's effect journal), not a live isolate: `resume` replays the journal in a
// fresh isolate (no tool runs twice) and then delivers the answer. So a paused execution
// costs no memory, and survives eviction, a crash, a SIGKILL and a redeploy. An
// unanswered approval is declined after `approval_timeout` by a durable alarm, and the
// execution continues with that decline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "dorm/engine/limits.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/result.hpp"

namespace dorm::engine {
class Pool;
}

namespace dorm::actors {

struct McpSessionOptions;

struct CodeModeOptions {
  // Runs the code. Required; must outlive every session.
  engine::Pool* pool = nullptr;
  // Per execution (engine/limits.hpp).
  engine::Limits limits;
  // How long a paused execution waits for `resume` before its approval
  // is declined with reason approval_timeout. The original system's window: 4 minutes.
  std::chrono::milliseconds approval_timeout{4 * 60 * 1000};
  // How long a paused execution keeps its isolate: a resume within it continues at once,
  // without replaying the journal. After it the execution is cold (stored only). 0: cold
  // at once. The record is stored at the pause either way, so a crash loses nothing.
  std::chrono::milliseconds warm_window{30'000};
  // Executions warm at once in the process, over every session: a warm execution holds
  // an engine slot, so only a few may — at most this many and at most half the pool's
  // slots — or pauses would starve new executions. Past that a pause goes cold at once.
  std::size_t max_warm = 2;
  // The count of warm executions now (shared by the sessions; not an option).
  mutable std::atomic<std::size_t> warm_now{0};
  // Where the approval page is served, e.g. "http://127.0.0.1:8808" (dorm serve sets its
  // own address). Each pause then carries a one-time `approvalUrl`; empty: none.
  std::string approval_base_url;
  // Outcomes of resumed executions kept per session, so a repeated `resume` of a settled
  // id answers the same thing (oldest dropped first).
  std::size_t settled_kept = 64;
};

// Adds `execute` and `resume` to `tools` (for MCP clients only: code cannot call them)
// and turns code mode on in `sessions`, which keeps a pointer to `options` (it must
// outlive the runtime). Errors: invalid_argument without a pool, for limits out of
// bounds, or when a name is taken in `tools`.
Result<void> enable_code_mode(mcp::ToolRegistry& tools, McpSessionOptions& sessions,
                              const CodeModeOptions& options);

}  // namespace dorm::actors
