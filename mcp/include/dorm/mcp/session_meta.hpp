// SessionMeta — what a session keeps about itself from `initialize` on.
//
// Stored as one JSON value under the session object's key "meta", written by initialize
// and read by every activation, so a session survives eviction and process restarts: a
// client that comes back with its session id after a restart is served without a new
// initialize. The owner is the identity that created the session; any other identity is
// told the session does not exist.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

struct SessionMeta {
  std::string protocol_version;     // negotiated at initialize
  std::string client_capabilities;  // compact JSON object, as the client sent it
  std::string client_info;          // compact JSON object ({} when absent)
  Identity owner;
  std::string log_level = "info";   // logging/setLevel; the MCP default is the server's
  std::int64_t created_ms = 0;
  bool initialized = false;         // notifications/initialized arrived

  std::string to_json() const;
  // Errors: corruption when `json` is not what to_json wrote.
  static Result<SessionMeta> from_json(std::string_view json);
};

}  // namespace dorm::mcp
