// The notifications a tool call sends its client while it runs, as complete JSON-RPC
// messages: both eras' call contexts (a 2025 session's, a 2026-07-28 request object's)
// write them the same way.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dorm::mcp {

// notifications/progress for `token_json` (the request's progressToken as compact JSON: a
// string or an integer), with `total` and `message` left out when absent or empty.
std::string progress_notification(std::string_view token_json, double progress, std::optional<double> total,
                                  std::string_view message);

// notifications/message at `level` (an MCP log level) with `data_json` (any JSON value).
std::string log_notification(std::string_view level, std::string_view data_json);

}  // namespace dorm::mcp
