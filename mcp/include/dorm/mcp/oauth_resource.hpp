// OAuthResource — dorm as an OAuth 2.1 resource server, as MCP's authorization spec
// (2025-06-18, 2025-11-25) makes a remote MCP server. docs/auth.md walks through it.
//
// A client learns where to get a token from the Protected Resource Metadata (RFC 9728)
// that this server publishes at `/.well-known/oauth-protected-resource` (and at the form
// suffixed with the resource's path, `/.well-known/oauth-protected-resource/mcp`), gets an
// access token from the authorization server (AS) for this server's URI (RFC 8707), and
// sends it as a bearer token. This class decides who the token speaks for:
//
//   * More than one AS may be trusted (an operator moving between identity providers, or
//     one per tenant). A token's `iss` — read before anything is verified — picks whose
//     keys must verify it, and a token naming no configured issuer is refused without any
//     fetch. Each AS has its own keys and fetch thread, so one that is down or slow never
//     holds up tokens of another.
//   * The AS's keys come from its JWKS, whose URL is read from its metadata (RFC 8414
//     `/.well-known/oauth-authorization-server`, else OpenID Connect discovery). Both are
//     fetched on a thread of this class, never on an HTTP or actor thread; a request whose
//     token needs them waits parked (its callback is kept) and is answered when they come.
//   * The keys are cached. A token whose `kid` is not among them makes the class fetch
//     the JWKS again (the AS rotated its keys), at most once per min_key_refresh: a flood
//     of tokens with made-up kids costs the AS one fetch per interval, and each of them a
//     401 at once in between. Keys older than max_key_age are refreshed in the background.
//   * A token that verified is remembered (by its SHA-256, up to verified_cache tokens,
//     least recently used dropped first) until it expires or its AS's keys are loaded
//     again: a client sends the same token with every request, and the HTTP front door
//     and the MCP handler both ask about it, so each token's signature is verified once.
//   * A token that is not a JWT (opaque) is introspected at the AS when
//     settings.introspection is set (token_introspection.hpp), else refused.
//   * The token is checked as access_token.hpp describes (issuer, audience = this server's
//     resource URI, expiry, scopes, a signature by the AS's key). Its principal — who the
//     session, executions and approvals belong to — is Identity{user: sub, org: iss}: the
//     issuer stands where a token file puts the organisation, so the same `sub` from
//     another issuer is someone else.
//
// Answers: no token or an invalid one → 401 with `WWW-Authenticate: Bearer
// resource_metadata="…"` (and error="invalid_token" when one was sent); a valid token
// without a required scope → 403 error="insufficient_scope"; keys unavailable → 503.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dorm/mcp/access_token.hpp"
#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/http_fetch.hpp"
#include "dorm/mcp/request_checks.hpp"
#include "dorm/mcp/token_introspection.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

struct OAuthSettings {
  // The issuer identifiers of the authorization servers trusted (https URLs; http to
  // loopback for tests), at least one. A token must carry exactly one of them as `iss`,
  // and that AS's metadata must name it too (RFC 8414 §3.3). Listed in this order as the
  // metadata's authorization_servers: clients usually take the first.
  std::vector<std::string> issuers;
  // This server's canonical URI (RFC 8707/9728 `resource`): every token's `aud` must
  // contain it. Empty until set_resource (dorm serve learns its port when it binds).
  std::string resource;
  // Scopes every token needs; advertised as scopes_supported.
  std::vector<std::string> scopes;
  std::chrono::seconds skew{60};
  // TokenRules::accept_plain_jwt: also take access tokens typed "JWT" or untyped.
  bool accept_plain_jwt = false;
  // Verified tokens remembered; 0 verifies every request's token again.
  std::size_t verified_cache = 4096;
  // An unknown `kid` fetches the JWKS again at most this often.
  std::chrono::milliseconds min_key_refresh{30'000};
  // Keys this old are fetched again (in the background; requests are not held up).
  std::chrono::milliseconds max_key_age{60 * 60 * 1000};
  // Requests parked waiting for keys at most; one more is answered 503 at once.
  std::size_t max_parked = 1024;
  FetchOptions fetch;
  // Opaque (non-JWT) tokens are introspected at the AS (RFC 7662) when set; without it
  // they are refused. Its `fetch` is replaced by the one above.
  std::optional<IntrospectionSettings> introspection;
};

// A request's answer from authentication: who it acts as, or the refusal to send.
using AuthVerdict = std::variant<Identity, Rejection>;
using AuthDone = std::function<void(AuthVerdict)>;

class OAuthResource {
 public:
  // Reads one URL (the AS metadata, the JWKS). The default is http_get with
  // settings.fetch; tests pass their own.
  using Fetch = std::function<Result<std::string>(const std::string& url)>;
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // Checks the settings (each issuer an absolute http(s) URL, named once; resource too
  // when set) and starts a fetch thread per issuer, which loads that AS's keys at once.
  // Errors: invalid_argument.
  // `introspect` replaces the introspection POST (tests).
  static Result<std::unique_ptr<OAuthResource>> start(OAuthSettings settings, Fetch fetch = {},
                                                      Clock clock = {},
                                                      TokenIntrospector::Post introspect = {});

  // stop().
  ~OAuthResource();
  OAuthResource(const OAuthResource&) = delete;
  OAuthResource& operator=(const OAuthResource&) = delete;

  // Sets the resource URI when the settings had none (dorm serve: after binding, from the
  // bound port). Until then every token is answered 503. Errors: invalid_argument.
  Result<void> set_resource(std::string resource);

  // Decides about the bearer token of a request (nullopt: none was sent). `done` runs
  // exactly once: at once on the calling thread when the cached keys decide, or later on
  // the fetch thread when the keys had to be fetched. Thread-safe; never blocks on I/O.
  void authenticate(std::optional<std::string_view> token, AuthDone done) const;

  // As authenticate, but never parks: nullopt when the answer needs a key fetch (the
  // caller then lets the request go on to where it can wait, e.g. HttpServer's handler).
  std::optional<AuthVerdict> authenticate_cached(std::optional<std::string_view> token) const;

  // The Protected Resource Metadata document (RFC 9728 §2), compact JSON.
  std::string metadata_json() const;
  // Where it is published for the resource: origin + "/.well-known/oauth-protected-
  // resource" + the resource's path (RFC 9728 §3.1). Empty before set_resource.
  std::string metadata_url() const;
  // True for the paths this server answers metadata_json() on: the bare well-known path
  // and the one suffixed with the resource's path.
  bool is_metadata_path(std::string_view path) const;

  // Ends the fetch thread (an exchange in progress ends within its timeout) and answers
  // every parked request 503. Idempotent; after it, authenticate answers 503 when the
  // cached keys do not decide.
  void stop();

  // How many times a JWKS was fetched (successfully or not), all issuers together: for
  // tests and logs.
  std::size_t key_fetches() const;
  // How many times a token was checked against an AS's keys (signature and claims; a
  // token answered from the verified cache is not counted): for tests and logs.
  std::size_t signature_checks() const;
  // How many introspection requests were sent to the AS (0 without introspection).
  std::size_t introspections() const;

 private:
  struct State;
  explicit OAuthResource(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The paths of the metadata document; HttpServer routes the prefix to the handler.
inline constexpr std::string_view kProtectedResourceMetadataPath =
    "/.well-known/oauth-protected-resource";

// The Protected Resource Metadata URL of `resource` (RFC 9728 §3.1), or "" when `resource`
// is not an absolute http(s) URL.
std::string protected_resource_metadata_url(std::string_view resource);

}  // namespace dorm::mcp
