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

// Parses "HOST:PORT" or "[IPV6]:PORT" as an RFC 3986 authority (Boost.URL): the host is a
// non-empty name or IPv4 address, or an IPv6 address in brackets; the port is a decimal
// number in 0..65535; userinfo is refused. Errors: invalid_argument naming what was wrong.
// Whether the host resolves is checked when the server binds, not here.
Result<ListenAddress> parse_listen_address(std::string_view text);

// Whether only this machine can reach `host`: "localhost", an IPv4 address in 127.0.0.0/8
// or the IPv6 address ::1 (in any spelling, with or without brackets). `dorm serve` without
// --auth-tokens listens only on such a host. (The Host header's built-in names are a
// narrower, spelled list: see dns_rebinding.hpp.)
bool is_loopback_host(std::string_view host);

}  // namespace dorm::mcp
