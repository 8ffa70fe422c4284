// Host and Origin allow-lists: the server's defence against DNS rebinding.
//
// A web page from evil.example can point evil.example's DNS record at 127.0.0.1 and then
// have the user's browser send requests to a server on the user's own machine. The
// browser still says where it thinks it is going and where the page came from —
// `Host: evil.example:8808`, `Origin: http://evil.example` — so a server that accepts
// only the names it is really reached by, and only pages it trusts, is safe. Host is
// checked on every request (HTTP/1.1 clients always send it); Origin only when present
// (programs that are not browsers send none). Built in are the loopback names with any
// port — `localhost`, `127.0.0.1`, `[::1]` — and, for Origin, those hosts under `http`
// and `https`. The operator adds more with `--allowed-hosts` and `--allowed-origins`.
// Names compare case-insensitively; everything else exactly. No DNS lookups happen here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::mcp {

// True if the Host header value ("name[:port]" or "[ipv6][:port]") is allowed: a
// built-in loopback name with any port, or a match for one of `allowed`, whose entries
// are "name" (any port) or "name:port" (that port only). A malformed value (a character
// outside letters, digits and "-._~", an empty or out-of-range port, userinfo) is never
// allowed; entries that are malformed never match.
bool host_allowed(std::string_view host, const std::vector<std::string>& allowed);

// True if the Origin header value ("scheme://host[:port]", as browsers serialize it) is
// allowed: http or https with a built-in loopback host and any port, or the same origin
// as one of `allowed` (scheme and host compared case-insensitively, and an explicit
// default port — 80 for http, 443 for https — the same as none). "null" (an opaque
// origin), a path, or anything malformed is never allowed.
bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed);

// Check one `--allowed-hosts` / `--allowed-origins` entry when the server starts, so a
// typo is reported rather than silently never matching. Errors: invalid_argument naming
// the entry and the expected form.
Result<void> check_allowed_host_entry(std::string_view entry);
Result<void> check_allowed_origin_entry(std::string_view entry);

}  // namespace dorm::mcp
