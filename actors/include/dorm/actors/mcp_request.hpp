// Requests of MCP 2026-07-28 as durable objects.
//
// The modern revision has no session: every request stands alone. The endpoint answers
// the ones that need no state itself (dorm/mcp/modern.hpp); each tools/call, prompts/get
// and resources/read gets a durable object of its own in the "mcp-request" namespace,
// named by 128 random bits, which serves it as a turn (or several, for a tool that waits)
// and, when it is done, deletes what it stored and leaves memory.
//
// A tool that needs input from the user (ToolContext::ask / request) ends its call with
// `resultType: "input_required"`: the questions it asked in `inputRequests`, and a
// `requestState` naming this object and the round, sealed with an HMAC for the owning
// principal under the server's key (modern.hpp, RequestState; the endpoint opens it, so a
// tampered or foreign state reaches no object). The object keeps a durable record of the
// request — its owner, its method and a digest of its params, the answers gathered in
// earlier rounds, the questions asked — and an alarm that erases it after `state_ttl`.
// The client sends the request again with the answers and the state; the object checks
// the state against its record (another round, another owner, other params, a replayed or
// expired state is refused with -32602 and resumes nothing), deletes the record in the same turn
// (a state is good once), and runs the tool again from the start with every answer so far
// at hand: its questions already answered are answered at once, the first new one ends
// the round. The record is in the store, so the retry works after a SIGKILL or a
// redeploy, on any process that opens the store.
//
// A tool that asks for something the request's client capabilities do not declare is
// refused (the tool's ask gets an error); if the call then stops with nothing left to
// wait for, it is answered -32021 with the missing capability (HTTP 400).
//
// Tasks (the io.modelcontextprotocol/tasks extension). A tools/call from a request that
// declared the extension, of a tool that allows tasks (ToolSpec::task_support), becomes a
// task when its first turn ends with the tool still working: the object's name is the
// task id, a durable record holds the task's status, and the request is answered at once
// with CreateTaskResult (after the record is committed, so a tasks/get right after finds
// it). The tool runs on as the object's turns; its result, its protocol error
// (ToolContext::fail) or its questions land in the record. tasks/get reads it, tasks/update
// answers the questions (once the last is answered the tool runs again from the start
// with every answer), tasks/cancel stops the work. A task whose work was running when its
// process died, or whose object was reset, is failed with the reaper's error
// (`server_restart` or `session_reset`, `retrySafe: false`) by the first activation after
// it — at boot, for every task the runtime index `mcp.tasks` names (wake_running_tasks).
// The record is deleted `task_ttl` after the task was created.
//
// Code mode (McpRequestOptions::code_mode). `execute` runs its code in the engine as the
// call's work, each tool the code calls as a turn of this object. A tool that needs a
// person's approval (ToolSpec::requires_approval) ends a round once nothing else runs:
// `input_required` with an `elicitation/create` per waiting call ("approval-<seq>"), and
// the execution stored as its engine journal beside the record — no isolate is kept. The
// retry replays the journal in a fresh isolate (no tool runs twice) and delivers the
// answers: accept runs the tool, decline or cancel rejects the code's call. So a paused
// execution survives a SIGKILL or a redeploy like any requestState. `tools.storage.*`
// lasts for the request (this revision has no session to keep it in); `resume` belongs to
// 2025 sessions and says so.
#pragma once

#include <chrono>
#include <string_view>

#include "dorm/mcp/modern.hpp"
#include "dorm/mcp/sse_sink.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct CodeModeOptions;

inline constexpr std::string_view kMcpRequestNamespace = "mcp-request";

struct McpRequestOptions {
  // The registries and the server's identity. Must outlive the runtime's use of it.
  const mcp::ModernServer* server = nullptr;
  // How long a requestState stays good once issued.
  std::chrono::milliseconds state_ttl{10 * 60 * 1000};
  // How long a task is kept after it is created (its ttlMs): then it is deleted, finished
  // or not.
  std::chrono::milliseconds task_ttl{60 * 60 * 1000};
  // What tasks tell clients about polling (pollIntervalMs).
  std::chrono::milliseconds task_poll_interval{500};
  // The response stream of a call that runs past its first turn.
  mcp::SinkOptions sink;
  // Code mode (code_mode.hpp), or null: `execute` in a request of this revision runs its
  // code here, and an approval ends a round of input_required (see below). Must outlive
  // the runtime.
  const CodeModeOptions* code_mode = nullptr;
};

// Registers the mcp-request namespace. `options` must outlive the runtime.
Result<void> register_mcp_request(Runtime& runtime, const McpRequestOptions& options);

// Activates every task whose work the store says is running (the `mcp.tasks` index): the
// ones a dead process left are failed by their activation. Returns how many were woken;
// does not wait for them. Errors: reading the index.
Result<std::size_t> wake_running_tasks(Runtime& runtime);

}  // namespace dorm::actors
