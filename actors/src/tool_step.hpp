// One rule for a piece of a tool's handler, wherever the tool runs (a session's call, a
// tool called by code, a request object of MCP 2026-07-28). Internal to actors/src.
#pragma once

#include <functional>
#include <string>

#include "dorm/mcp/tool.hpp"
#include "dorm/result.hpp"

namespace dorm::actors {

// Runs a piece of a tool's handler: a throw finishes the call with an error result
// through `finish`, except a failure of the store (a non-input ErrorException, thrown by
// value_or_throw), which is rethrown to fail the turn (see McpSession::CallContext::run).
inline void run_tool_step(const std::function<void()>& step, const std::function<void(mcp::ToolResult)>& finish) {
  try {
    step();
  } catch (const ErrorException& e) {
    if (!is_input_error(e.error().code)) throw;
    finish(mcp::ToolResult::error(std::string("tool failed: ") + e.what()));
  } catch (const std::exception& e) {
    finish(mcp::ToolResult::error(std::string("tool failed: ") + e.what()));
  }
}

}  // namespace dorm::actors
