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
// `requestState` naming this object, the round and a 128-bit secret (modern.hpp,
// RequestState). The object keeps a durable record of the request — its owner, its
// method and a digest of its params, the answers gathered in earlier rounds, the
// questions asked, the digest of the secret — and an alarm that erases it after
// `state_ttl`. The client sends the request again with the answers and the state; the
// object checks the state against its record (a tampered, foreign, replayed or expired
// state is refused with -32602 and resumes nothing), deletes the record in the same turn
// (a state is good once), and runs the tool again from the start with every answer so far
// at hand: its questions already answered are answered at once, the first new one ends
// the round. The record is in the store, so the retry works after a SIGKILL or a
// redeploy, on any process that opens the store.
//
// A tool that asks for something the request's client capabilities do not declare is
// refused (the tool's ask gets an error); if the call then stops with nothing left to
// wait for, it is answered -32021 with the missing capability (HTTP 400).
#pragma once

#include <chrono>
#include <string_view>

#include "dorm/mcp/modern.hpp"
#include "dorm/mcp/sse_sink.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

inline constexpr std::string_view kMcpRequestNamespace = "mcp-request";

struct McpRequestOptions {
  // The registries and the server's identity. Must outlive the runtime's use of it.
  const mcp::ModernServer* server = nullptr;
  // How long a requestState stays good once issued.
  std::chrono::milliseconds state_ttl{10 * 60 * 1000};
  // The response stream of a call that runs past its first turn.
  mcp::SinkOptions sink;
};

// Registers the mcp-request namespace. `options` must outlive the runtime.
Result<void> register_mcp_request(Runtime& runtime, const McpRequestOptions& options);

}  // namespace dorm::actors
