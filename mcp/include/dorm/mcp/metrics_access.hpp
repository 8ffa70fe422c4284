// Who may read `GET /metrics` (docs/operations.md#metrics).
//
// The metrics tell how busy the server is and what it holds — sessions, calls, failures,
// storage sizes — which is not for every caller of `/mcp`. So they have their own rule,
// the usual one for a server's admin surface: a caller on the same machine (a loopback
// peer) may scrape without credentials, and any other caller needs a bearer token from
// the metrics token file (`dorm serve --metrics-tokens FILE`, the format of
// auth_tokens.hpp: SHA-256 digests, reloaded on SIGHUP; an MCP client's token does not
// open it). The first row that applies answers:
//
//   405  a method other than GET or HEAD                          (Allow: GET, HEAD)
//   400  Authorization, Host or Origin sent on more than one line
//   ok   a bearer token the metrics token file holds, from any peer
//   401  any other Authorization header (an unknown token, another scheme)
//                                                               (WWW-Authenticate: Bearer)
//   401  no Authorization, a peer that is not loopback, and a metrics token file is set
//   403  no Authorization, a peer that is not loopback, and no metrics token file
//   403  no Authorization, a loopback peer, and Origin present and not allowed
//   403  no Authorization, a loopback peer, and Host missing or not allowed
//   ok   otherwise (no Authorization and a loopback peer)
//
// Why Host and Origin on the loopback path: a web page can have the user's browser send
// requests to the user's own machine under a name the page controls (DNS rebinding, see
// dns_rebinding.hpp); the browser then names that host and page, which are not allowed
// here, so the page cannot read the metrics. A token cannot be sent by such a page, so a
// request with a valid token is not checked for them. A reverse proxy on the same machine
// makes every request it forwards a loopback one: do not route /metrics through a proxy
// that strangers can reach (docs/operations.md#metrics).
//
// Every refusal is a short plain-text body saying what to do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/http_server.hpp"

namespace dorm::mcp {

struct MetricsAccessPolicy {
  // The metrics token file, or null: then only loopback peers may scrape. Not owned; must
  // outlive every call that uses the policy.
  const AuthTokens* tokens = nullptr;
  // As CheckPolicy's (the server's --allowed-hosts and --allowed-origins).
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
};

// The answer that refuses `head` (its method, headers and peer fields are read), or
// nullopt when it may have the metrics. Pure: no I/O beyond reading the token set.
std::optional<HttpResponse> refuse_scrape(const HttpRequest& head,
                                          const MetricsAccessPolicy& policy);

}  // namespace dorm::mcp
