// The port of an authority that Boost.URL has parsed (private to mcp/src).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dorm::mcp::detail {

// `digits` (RFC 3986: *DIGIT, so possibly empty) as a port number; none if it is empty,
// longer than five digits or above 65535. Boost.URL's own port_number() cannot tell: it
// wraps modulo 65536.
inline std::optional<std::uint16_t> port_number(std::string_view digits) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || digits.size() > 5 || ec != std::errc{} ||
      end != digits.data() + digits.size() || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace dorm::mcp::detail
