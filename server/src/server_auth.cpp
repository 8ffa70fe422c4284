#include "server_auth.hpp"

#include "dorm/runtime/log.hpp"

namespace dorm::server {

std::string auth_mode(const ServerOptions& options, const mcp::ListenAddress& listen) {
  std::string mode = !options.auth.empty() ? options.auth : options.auth_tokens.empty() ? "none" : "tokens";
  auto refuse = [](const std::string& why) {
    log::error("bad_auth_options", {{"error", why}});
    return std::string();
  };
  if (mode != "tokens" && !options.auth_tokens.empty()) return refuse("--auth-tokens is for --auth tokens");
  if (mode != "oauth" && (!options.oauth_issuer.empty() || !options.oauth_audience.empty() ||
                          !options.oauth_scopes.empty())) {
    return refuse("the --oauth-* options are for --auth oauth");
  }
  if (mode == "tokens" && options.auth_tokens.empty()) return refuse("--auth tokens needs --auth-tokens FILE");
  if (mode == "oauth" && options.oauth_issuer.empty()) return refuse("--auth oauth needs --oauth-issuer URL");
  if (mode == "none" && !mcp::is_loopback_host(listen.host)) {
    log::error("refusing_to_listen",
               {{"error", "--listen " + listen.to_string() +
                              " is reachable from other machines: without authentication "
                              "dorm serves a single local user, so listen on 127.0.0.1, "
                              "::1 or localhost, or give --auth-tokens FILE or --auth oauth"}});
    return std::string();
  }
  return mode;
}

Result<std::unique_ptr<mcp::OAuthResource>> start_oauth(const ServerOptions& options) {
  mcp::OAuthSettings settings;
  settings.issuer = options.oauth_issuer;
  settings.resource = options.oauth_audience;
  settings.scopes = options.oauth_scopes;
  settings.min_key_refresh = std::chrono::milliseconds(options.oauth_min_key_refresh_ms);
  settings.fetch.allow_http = options.oauth_allow_http;
  return mcp::OAuthResource::start(std::move(settings));
}

}  // namespace dorm::server
