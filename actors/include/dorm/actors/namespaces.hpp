// The durable-object namespaces dorm itself defines.
#pragma once

#include <string_view>

namespace dorm::actors {

// MCP sessions: one durable object per session id. Its idle policy is the session's own
// alarm (docs/architecture.md#idle-sessions), so the runtime's idle eviction is off for
// this namespace.
inline constexpr std::string_view kMcpSessionNamespace = "mcp-session";

// Code mode's execution-owner directory: one object per paused execution id, naming the
// session that owns it (actors/src/execution_owner.hpp). Registered with code mode.
inline constexpr std::string_view kExecutionOwnerNamespace = "execution-owner";

}  // namespace dorm::actors
