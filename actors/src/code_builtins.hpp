// The built-in paths of code mode's `tools` proxy, shared by the two places code runs (a
// 2025 session, McpSession::Code; a 2026-07-28 request object, McpRequest::CodeRun):
// `search` and `describe.tool` over the registry's code tools, and `storage.*` over a
// store its caller maps to its own keys. Internal to actors/src.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dorm/mcp/tool_registry.hpp"
#include "dorm/result.hpp"

namespace dorm::actors::code_builtins {

// What a built-in answers: ok and a JSON value, or not ok and the message the code's
// promise rejects with.
using Reply = std::pair<bool, std::string>;

// Whether `path` names a built-in (search, describe.tool, storage.*): those never reach
// the registry.
bool is_builtin(std::string_view path);

// Where storage.* keeps JSON values. Keys are the code's own (at most kMaxKeyBytes); the
// implementation puts them under its own prefix. A failure of the store is thrown by the
// caller (it fails the turn); an input error (a value over the limit) is the code's.
class Store {
 public:
  virtual ~Store() = default;
  virtual Result<std::optional<std::string>> get(std::string_view key) = 0;
  virtual Result<void> put(std::string_view key, std::string_view value) = 0;
  virtual Result<bool> del(std::string_view key) = 0;
  // Up to `limit` (key, value) pairs whose code key starts with `prefix`, in key order.
  virtual Result<std::vector<std::pair<std::string, std::string>>> list(std::string_view prefix,
                                                                        std::size_t limit) = 0;
};

// storage.* keys: as an object's own keys allow, with room for a prefix.
inline constexpr std::size_t kMaxKeyBytes = 512;

// Answers the built-in at `path` with arguments `args_json`: search and describe.tool
// from `tools` (its code exposure), storage.* from `store`.
Reply answer(const mcp::ToolRegistry& tools, Store& store, const std::string& path, const std::string& args_json);

// What a tools.* promise gets from a tool's CallToolResult (JSON text): ok and the value
// (JSON), or not ok and the message it rejects with. The value is the structuredContent
// when there is one; a single text block gives its text, parsed when it is JSON ("1" → 1)
// and as a string otherwise; anything else gives the content array.
Reply value_for_code(const mcp::ToolResult& result);

// The form that asks a person to approve a tool call: accepting it is the approval; it
// asks for nothing else.
inline constexpr std::string_view kApprovalSchema = R"({"type":"object","properties":{}})";

}  // namespace dorm::actors::code_builtins
