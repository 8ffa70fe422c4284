// The conformance suite's server fixtures (fixtures.cpp registers them as the
// "conformance" set). Internal to actors/src.
#pragma once

#include "dorm/mcp/tool_registry.hpp"
#include "dorm/result.hpp"

namespace dorm::actors {

// The tools the suite's tools-* , elicitation-* and json-schema-* scenarios call.
Result<void> register_conformance_tools(mcp::ToolRegistry& registry);

}  // namespace dorm::actors
