#include "dorm/mcp/dns_rebinding.hpp"

#include <charconv>
#include <cstdint>
#include <optional>

namespace dorm::mcp {
namespace {

constexpr std::string_view kLoopbackHosts[] = {"localhost", "127.0.0.1", "[::1]"};

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// "host[:port]" with the host lower-cased; an IPv6 literal keeps its brackets.
struct Authority {
  std::string host;
  std::optional<std::uint16_t> port;

  friend bool operator==(const Authority&, const Authority&) = default;
};

// Parses the authority of a Host header or an origin. Host names are limited to
// letters, digits and "-._~" (what DNS names and IPv4 literals use); IPv6 literals to
// hex digits, ':' and '.' inside brackets. Percent-encoding, userinfo and zone ids are
// refused: no legitimate client of this server needs them.
std::optional<Authority> parse_authority(std::string_view text) {
  Authority a;
  std::string_view rest;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    for (char c : text.substr(1, close - 1)) {
      if (!is_hex(c) && c != ':' && c != '.') return std::nullopt;
    }
    a.host = std::string(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    auto colon = text.find(':');
    std::string_view host = text.substr(0, colon);
    if (host.empty()) return std::nullopt;
    for (char c : host) {
      if (!is_alnum(c) && c != '-' && c != '.' && c != '_' && c != '~') return std::nullopt;
    }
    a.host = std::string(host);
    rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
  }
  for (char& c : a.host) c = lower(c);
  if (rest.empty()) return a;
  if (rest.front() != ':') return std::nullopt;
  std::string_view digits = rest.substr(1);
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size() || value > 65535) {
    return std::nullopt;
  }
  a.port = static_cast<std::uint16_t>(value);
  return a;
}

bool is_loopback(const Authority& a) {
  for (std::string_view h : kLoopbackHosts) {
    if (a.host == h) return true;
  }
  return false;
}

// An origin with a lower-case scheme and host; a default port is stored as none.
struct Origin {
  std::string scheme;
  Authority authority;

  friend bool operator==(const Origin&, const Origin&) = default;
};

std::optional<Origin> parse_origin(std::string_view text) {
  auto separator = text.find("://");
  if (separator == std::string_view::npos || separator == 0) return std::nullopt;
  Origin o;
  std::string_view scheme = text.substr(0, separator);
  if (!((scheme[0] >= 'a' && scheme[0] <= 'z') || (scheme[0] >= 'A' && scheme[0] <= 'Z'))) {
    return std::nullopt;
  }
  for (char c : scheme) {
    if (!is_alnum(c) && c != '+' && c != '-' && c != '.') return std::nullopt;
    o.scheme += lower(c);
  }
  auto authority = parse_authority(text.substr(separator + 3));
  if (!authority) return std::nullopt;
  o.authority = std::move(*authority);
  if ((o.scheme == "http" && o.authority.port == 80) ||
      (o.scheme == "https" && o.authority.port == 443)) {
    o.authority.port.reset();
  }
  return o;
}

}  // namespace

bool host_allowed(std::string_view host, const std::vector<std::string>& allowed) {
  auto presented = parse_authority(host);
  if (!presented) return false;
  if (is_loopback(*presented)) return true;
  for (const std::string& entry : allowed) {
    auto permitted = parse_authority(entry);
    if (!permitted || permitted->host != presented->host) continue;
    if (!permitted->port || permitted->port == presented->port) return true;
  }
  return false;
}

bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed) {
  auto presented = parse_origin(origin);
  if (!presented) return false;
  if ((presented->scheme == "http" || presented->scheme == "https") &&
      is_loopback(presented->authority)) {
    return true;
  }
  for (const std::string& entry : allowed) {
    if (parse_origin(entry) == presented) return true;
  }
  return false;
}

Result<void> check_allowed_host_entry(std::string_view entry) {
  if (parse_authority(entry)) return {};
  return Error{ErrorCode::invalid_argument,
               "invalid allowed host '" + std::string(entry) +
                   "': expected NAME or NAME:PORT (an IPv6 address in brackets, e.g. [::1]:8808)"};
}

Result<void> check_allowed_origin_entry(std::string_view entry) {
  if (parse_origin(entry)) return {};
  return Error{ErrorCode::invalid_argument,
               "invalid allowed origin '" + std::string(entry) +
                   "': expected SCHEME://HOST or SCHEME://HOST:PORT with no path, e.g. "
                   "https://app.example.com"};
}

}  // namespace dorm::mcp
