#include "dorm/mcp/listen_address.hpp"

#include <algorithm>
#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>

#include "port_number.hpp"

namespace dorm::mcp {
namespace {

namespace urls = boost::urls;

Error bad(std::string_view text, std::string_view why) {
  return Error{ErrorCode::invalid_argument,
               "invalid listen address '" + std::string(text) + "': " + std::string(why)};
}

// Why `text` is not an RFC 3986 authority, for the error message.
std::string_view unparsed(std::string_view text) {
  if (text.starts_with('[')) {
    return text.find(']') == std::string_view::npos
               ? "missing ']' after IPv6 address"
               : "expected [IPV6]:PORT with an IPv6 address in the brackets";
  }
  if (std::count(text.begin(), text.end(), ':') > 1) {
    return "an IPv6 address must be written in brackets, e.g. [::1]:8808";
  }
  return "expected HOST:PORT, HOST a name or an IP address and PORT a number from 0 to 65535";
}

}  // namespace

std::string ListenAddress::to_string() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto parsed = urls::parse_authority(text);
  if (!parsed) return bad(text, unparsed(text));
  const urls::authority_view& a = *parsed;
  if (a.has_userinfo()) return bad(text, "expected HOST:PORT, with no user name");
  if (a.host_type() == urls::host_type::ipvfuture) {
    return bad(text, "brackets may only enclose an IPv6 address");
  }
  if (a.encoded_host().empty()) return bad(text, "the host is empty");
  if (!a.has_port()) return bad(text, "expected HOST:PORT");
  if (a.port().empty()) return bad(text, "the port is empty");
  auto port = detail::port_number(a.port());
  if (!port) return bad(text, "the port must be a number from 0 to 65535");
  return ListenAddress{std::string(a.encoded_host_address()), *port};
}

bool is_loopback_host(std::string_view host) {
  if (host.starts_with('[') && host.ends_with(']')) {
    host = host.substr(1, host.size() - 2);
    auto v6 = urls::parse_ipv6_address(host);
    return v6 && v6->is_loopback();
  }
  if (host == "localhost") return true;
  if (auto v4 = urls::parse_ipv4_address(host)) return v4->is_loopback();
  auto v6 = urls::parse_ipv6_address(host);
  return v6 && v6->is_loopback();
}

}  // namespace dorm::mcp
