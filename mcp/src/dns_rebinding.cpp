#include "dorm/mcp/dns_rebinding.hpp"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <cstdint>
#include <optional>

#include "port_number.hpp"

namespace dorm::mcp {
namespace {

namespace urls = boost::urls;

// The names a browser shows for this machine, compared as spelled: another spelling of a
// loopback address (127.0.0.2, [0::1]) is another host, allowed only by an entry of its own
// (docs/mcp.md). Where the server may listen without tokens is a different question,
// answered by is_loopback_host().
constexpr std::string_view kBuiltInHosts[] = {"localhost", "127.0.0.1", "[::1]"};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// "host[:port]" with the host lower-cased; an IPv6 literal keeps its brackets.
struct Authority {
  std::string host;
  std::optional<std::uint16_t> port;

  friend bool operator==(const Authority&, const Authority&) = default;
};

// The authority of a Host header or an origin, as parsed by Boost.URL (RFC 3986), with
// what no legitimate client of this server needs refused on top: userinfo, percent-encoding
// and the sub-delimiters RFC 3986 allows in a name (a host name is letters, digits and
// "-._~", what DNS names and IPv4 literals use), an empty name, IPvFuture literals, and a
// port that is empty, longer than five digits or above 65535. Zone ids ("[::1%eth0]") do
// not parse at all.
std::optional<Authority> checked(const urls::authority_view& view) {
  if (view.has_userinfo()) return std::nullopt;
  std::string_view host = view.encoded_host();
  switch (view.host_type()) {
    case urls::host_type::name:
      if (host.empty() || !std::all_of(host.begin(), host.end(),
                                       [](char c) { return urls::unreserved_chars(c); })) {
        return std::nullopt;
      }
      break;
    case urls::host_type::ipv4:
    case urls::host_type::ipv6:
      break;
    default:
      return std::nullopt;
  }
  Authority a{lower(host), std::nullopt};
  if (!view.has_port()) return a;
  a.port = detail::port_number(view.port());
  if (!a.port) return std::nullopt;
  return a;
}

std::optional<Authority> parse_authority(std::string_view text) {
  auto view = urls::parse_authority(text);
  if (!view) return std::nullopt;
  return checked(*view);
}

bool built_in(const Authority& a) {
  return std::find(std::begin(kBuiltInHosts), std::end(kBuiltInHosts), a.host) !=
         std::end(kBuiltInHosts);
}

// An origin with a lower-case scheme and host; a default port is stored as none.
struct Origin {
  std::string scheme;
  Authority authority;

  friend bool operator==(const Origin&, const Origin&) = default;
};

// "scheme://authority" and nothing more: no path (not even "/"), query or fragment.
std::optional<Origin> parse_origin(std::string_view text) {
  auto url = urls::parse_absolute_uri(text);
  if (!url || !url->has_authority() || !url->encoded_path().empty() || url->has_query()) {
    return std::nullopt;
  }
  auto authority = checked(url->authority());
  if (!authority) return std::nullopt;
  Origin o{lower(url->scheme()), std::move(*authority)};
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
  if (built_in(*presented)) return true;
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
      built_in(presented->authority)) {
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
