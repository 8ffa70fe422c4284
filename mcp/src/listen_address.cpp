#include "dorm/mcp/listen_address.hpp"

#include <charconv>

namespace dorm::mcp {
namespace {

Error bad(std::string_view text, std::string_view why) {
  return Error{ErrorCode::invalid_argument,
               "invalid listen address '" + std::string(text) + "': " + std::string(why)};
}

bool printable_without_space(std::string_view s) {
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string ListenAddress::to_string() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "missing ']' after IPv6 address");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.starts_with(':')) return bad(text, "expected ':PORT' after ']'");
    port = rest.substr(1);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad(text, "expected HOST:PORT");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad(text, "an IPv6 address must be written in brackets, e.g. [::1]:8808");
    }
  }
  if (host.empty()) return bad(text, "the host is empty");
  if (!printable_without_space(host)) return bad(text, "the host contains a space or control character");
  if (host.find_first_of("[]") != std::string_view::npos) {
    return bad(text, "brackets may only enclose a whole IPv6 address");
  }
  if (port.empty()) return bad(text, "the port is empty");
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value > 65535) {
    return bad(text, "the port must be a number from 0 to 65535");
  }
  return ListenAddress{std::string(host), static_cast<std::uint16_t>(value)};
}

}  // namespace dorm::mcp
