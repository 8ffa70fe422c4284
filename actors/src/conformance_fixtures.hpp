// The conformance suite's server fixtures (fixtures.cpp registers them as the
// "conformance" set). Internal to actors/src.
#pragma once

#include <rapidjson/document.h>

#include <string>

#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/result.hpp"

namespace dorm::actors {

// `value` as compact JSON text (both fixture files build results and params with it).
std::string json_of(const rapidjson::Value& value);

// The tools the suite's tools-* , elicitation-* and json-schema-* scenarios call.
Result<void> register_conformance_tools(mcp::ToolRegistry& registry);
// The tools of its 2026-07-28 scenarios (server-stateless, input-required-result-*):
// modern_fixtures.cpp.
Result<void> register_modern_conformance_tools(mcp::ToolRegistry& registry);
Result<void> register_modern_conformance_prompts(mcp::PromptRegistry& registry);
// The resources, the template and the prompts of its resources-*, prompts-* and
// completion-* scenarios.
Result<void> register_conformance_resources(mcp::ResourceRegistry& registry);
Result<void> register_conformance_prompts(mcp::PromptRegistry& registry);

}  // namespace dorm::actors
