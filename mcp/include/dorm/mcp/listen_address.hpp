// The `--listen HOST:PORT` address of `dorm serve`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::mcp {

struct ListenAddress {
  std::string host;        // a host name or an IP literal, without IPv6 brackets
  std::uint16_t port = 0;  // 0 asks the operating system for a free port

  // "HOST:PORT", with brackets around an IPv6 literal.
  std::string to_string() const;
};

// Parses "HOST:PORT" or "[IPV6]:PORT". The host must be non-empty and contain no
// whitespace or control characters; the port is a decimal number in 0..65535.
// Errors: invalid_argument naming what was wrong. Whether the host resolves is checked
// when the server binds, not here.
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace dorm::mcp
