// The seam between the `execute` tool (enable_code_mode, mcp_session_code.cpp) and the
// request objects of MCP 2026-07-28 (mcp_request_code.cpp). Internal to actors/src.
#pragma once

#include <memory>

#include "dorm/mcp/tool.hpp"

namespace dorm::actors {

// Runs `execute` (resume: answers `resume`'s error for this revision) when `context` is
// a tools/call of a 2026-07-28 request object; false for any other context.
bool run_modern_code(const std::shared_ptr<mcp::ToolContext>& context, bool resume);

}  // namespace dorm::actors
