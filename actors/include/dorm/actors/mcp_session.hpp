// MCP sessions as durable objects: the options every session of a server shares, and the
// registration of the "mcp-session" namespace. The object itself (McpSession, in
// actors/src/mcp_session.hpp) is reached only through the runtime: the HTTP endpoint sends
// it SessionCall messages (dorm/mcp/session_call.hpp), and so can a test on virtual time.
//
// A session is created by `initialize`, which stores its metadata (negotiated revision,
// client capabilities and info, owner, log level); every later call is answered from that
// metadata, so after eviction or a process restart the same session id keeps working
// without a new initialize. A call from an identity other than the owner gets the same
// 404 as a session that does not exist, and a `session_owner_mismatch` log line. DELETE
// removes everything the session stored; later calls get 404. An activation that finds no
// session (an unknown or deleted id) answers 404 and leaves memory at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "dorm/mcp/event_log.hpp"
#include "dorm/mcp/idle_policy.hpp"
#include "dorm/mcp/listen_hub.hpp"
#include "dorm/mcp/sse_sink.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct CodeModeOptions;

// What sessions count for monitoring (GET /metrics, server_metrics.hpp): plain atomics a
// server owns and every session adds to, each once the commit that made it true returned.
struct SessionCounters {
  std::atomic<std::uint64_t> created{0};  // initialize stored a new session
  std::atomic<std::uint64_t> deleted{0};  // DELETE or the session TTL erased one
  // Requests the restart reaper answered with -32001, by the error's data.reason.
  std::atomic<std::uint64_t> reaped_server_restart{0};
  std::atomic<std::uint64_t> reaped_session_reset{0};
  // Code mode: owner records of paused executions written and removed (the execution
  // settled, was resumed elsewhere or expired). Their difference is how many more paused
  // executions the store holds than when counting began.
  std::atomic<std::uint64_t> executions_paused{0};
  std::atomic<std::uint64_t> executions_unpaused{0};
};

struct McpSessionOptions {
  std::string server_name = "dorm";
  std::string server_version;
  // The tools, resources and prompts this server offers (null: none). Each must outlive
  // every session; `initialize` announces a capability only for what is there.
  const mcp::ToolRegistry* tools = nullptr;
  const mcp::ResourceRegistry* resources = nullptr;
  const mcp::PromptRegistry* prompts = nullptr;
  // Code mode (`execute` and `resume`), set by enable_code_mode(); null: off.
  const CodeModeOptions* code_mode = nullptr;
  // tools/list page size.
  std::size_t page_size = 100;
  // How long a tool waits for the client to answer a request it sent (elicitation,
  // sampling, roots) before its reply handler gets a timeout. The TypeScript SDK's default.
  std::chrono::milliseconds client_request_timeout{60'000};
  // The `retry:` hint of priming events (sessions of 2025-11-25 and later): how long a
  // client waits before it resumes a dropped stream.
  std::int64_t retry_ms = 500;
  mcp::EventLogLimits event_limits;
  // Open SSE connections: the slow-reader limit and keep-alive interval.
  mcp::SinkOptions sink;
  // When an idle session leaves memory (docs/architecture.md#idle-sessions). The session
  // namespace has no runtime idle eviction: this policy, run by the session's "idle" alarm,
  // is its only evictor.
  mcp::IdlePolicy idle;
  // A session idle this long is deleted (storage included) by its idle alarm: most
  // clients never send DELETE. `dorm serve --session-ttl`.
  std::chrono::milliseconds session_ttl{7LL * 24 * 60 * 60 * 1000};
  // The bound of each resident session's storage cache (NamespaceOptions::
  // storage_cache_bytes; 0 = none): a session's per-call reads and listings are then
  // served from memory once loaded.
  std::size_t storage_cache_bytes = NamespaceOptions{}.storage_cache_bytes;
  // Development switches, to reproduce the incident the reaper and priming fix (hidden
  // `dorm serve --no-reaper` / `--no-priming`); never turn them off in production.
  // reaper: every start answers the requests a dead activation left unanswered (reaper.hpp).
  bool reaper = true;
  // priming: sessions of 2025-11-25 and later get a priming event first on each stream.
  bool priming = true;
  // Where sessions count what they did (null: nowhere). Must outlive every session.
  SessionCounters* counters = nullptr;
  // The subscriptions/listen streams of MCP 2026-07-28 clients (null: none): a tool's
  // list change or resource update reaches them too, whichever era its caller speaks.
  // Must outlive every session.
  mcp::ListenHub* listen = nullptr;
};

// Registers the mcp-session namespace on `runtime`. `options` must outlive it.
Result<void> register_mcp_session(Runtime& runtime, const McpSessionOptions& options);

}  // namespace dorm::actors
