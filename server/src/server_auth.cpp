#include "server_auth.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "dorm/runtime/log.hpp"

namespace dorm::server {

std::string auth_mode(const ServerOptions& options, const mcp::ListenAddress& listen) {
  std::string mode = !options.auth.empty() ? options.auth : options.auth_tokens.empty() ? "none" : "tokens";
  auto refuse = [](const std::string& why) {
    log::error("bad_auth_options", {{"error", why}});
    return std::string();
  };
  if (mode != "tokens" && !options.auth_tokens.empty()) return refuse("--auth-tokens is for --auth tokens");
  if (mode != "oauth" && (!options.oauth_issuers.empty() || !options.oauth_audience.empty() ||
                          !options.oauth_scopes.empty() || options.oauth_accept_plain_jwt ||
                          !options.oauth_ca_file.empty() || !options.oauth_introspection_url.empty() ||
                          !options.oauth_client_id.empty() || !options.oauth_client_secret_file.empty())) {
    return refuse("the --oauth-* options are for --auth oauth");
  }
  if (mode == "tokens" && options.auth_tokens.empty()) return refuse("--auth tokens needs --auth-tokens FILE");
  if (mode == "oauth" && options.oauth_issuers.empty()) return refuse("--auth oauth needs --oauth-issuer URL");
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

namespace {

// The client secret for introspection, from a file so it is not in `ps` or shell history:
// the file's content without trailing line breaks and blanks.
Result<std::string> read_client_secret(const std::string& path) {
  if (path.empty()) return std::string();  // TokenIntrospector::start names what is missing
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Error{ErrorCode::invalid_argument, "--oauth-client-secret-file " + path + " is not a regular file"};
  }
  std::ifstream in(path, std::ios::binary);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return Error{ErrorCode::io_error, "--oauth-client-secret-file " + path + " could not be read"};
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' || secret.back() == ' ')) {
    secret.pop_back();
  }
  if (secret.empty()) return Error{ErrorCode::invalid_argument, "--oauth-client-secret-file " + path + " is empty"};
  return secret;
}

}  // namespace

Result<std::unique_ptr<mcp::OAuthResource>> start_oauth(const ServerOptions& options) {
  mcp::OAuthSettings settings;
  settings.issuers = options.oauth_issuers;
  settings.resource = options.oauth_audience;
  settings.scopes = options.oauth_scopes;
  settings.min_key_refresh = std::chrono::milliseconds(options.oauth_min_key_refresh_ms);
  settings.fetch.allow_http = options.oauth_allow_http;
  settings.fetch.ca_file = options.oauth_ca_file;
  settings.accept_plain_jwt = options.oauth_accept_plain_jwt;
  if (!options.oauth_introspection_url.empty()) {
    mcp::IntrospectionSettings introspection;
    introspection.url = options.oauth_introspection_url;
    introspection.client_id = options.oauth_client_id;
    introspection.cache_ttl = std::chrono::seconds(options.oauth_introspection_cache_ttl_s);
    auto secret = read_client_secret(options.oauth_client_secret_file);
    if (!secret) return secret.error();
    introspection.client_secret = std::move(*secret);
    settings.introspection = std::move(introspection);
  } else if (!options.oauth_client_id.empty() || !options.oauth_client_secret_file.empty()) {
    return Error{ErrorCode::invalid_argument,
                 "--oauth-client-id and --oauth-client-secret-file are for --oauth-introspection-url"};
  }
  return mcp::OAuthResource::start(std::move(settings));
}

}  // namespace dorm::server
