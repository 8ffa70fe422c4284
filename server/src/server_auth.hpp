// A server's authentication options (docs/auth.md; ServerOptions::auth and the rest):
// which mode --auth picks, whether the other flags fit it, and the OAuth resource server
// it starts.
#pragma once

#include <memory>
#include <string>

#include "dorm/mcp/listen_address.hpp"
#include "dorm/mcp/oauth_resource.hpp"
#include "dorm/result.hpp"
#include "dorm/server/server.hpp"

namespace dorm::server {

// "tokens", "oauth" or "none": --auth, or the default for the flags given ("tokens" with
// --auth-tokens, else "none"). Empty (the reason logged) when the flags do not fit the
// mode: --auth-tokens or --oauth-* with another mode, a mode without what it needs, or
// "none" on an address other machines can reach.
std::string auth_mode(const ServerOptions& options, const mcp::ListenAddress& listen);

// --auth oauth: the resource server, its keys loading on a thread of its own.
Result<std::unique_ptr<mcp::OAuthResource>> start_oauth(const ServerOptions& options);

}  // namespace dorm::server
