// Opaque access tokens, checked by asking the authorization server: OAuth 2.0 Token
// Introspection (RFC 7662). Some authorization servers (Auth0's and Okta's defaults, many
// in-house ones) hand out access tokens that are random strings, not JWTs; only the AS
// knows what they mean. dorm, as a resource server with a client id and secret of its own
// at the AS, POSTs such a token to the AS's introspection endpoint and reads the answer:
//
//   {"active": true, "sub": "alice", "iss": "https://as.example", "aud": "https://mcp…",
//    "scope": "mcp", "exp": 1800000000, "client_id": "claude"}
//
// check_introspected applies the same rules as a JWT's (access_token.hpp), to the facts
// the AS gave; missing facts are not invented:
//
//   inactive            `active` is not true (unknown, revoked, expired at the AS)
//   wrong_issuer        `iss` is present and is not a configured issuer
//   wrong_audience      `aud` is present and does not contain this server's URI
//   expired             `exp` is present and now is at or after `exp` + skew
//   not_yet_valid       `nbf` is present and now is before `nbf` - skew
//   missing_subject     neither `sub` nor `client_id` (a client acting for itself)
//   insufficient_scope  a required scope is not in `scope`
//
// The principal is {user: sub (else client_id), org: iss (else the first configured
// issuer)}. TokenIntrospector is the client: a few threads of its own post the tokens,
// answers are remembered for a while (an active token at most until its `exp`), and
// concurrent requests with the same token share one introspection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dorm/mcp/access_token.hpp"
#include "dorm/mcp/http_fetch.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// What an introspection answer said about a token.
struct IntrospectedToken {
  bool active = false;
  std::string issuer;                 // `iss`, empty when absent
  std::string subject;                // `sub`, empty when absent
  std::string client_id;              // `client_id`, empty when absent
  std::vector<std::string> audience;  // `aud` (a string or an array), empty when absent
  std::vector<std::string> scopes;    // `scope`, split at spaces
  std::optional<std::int64_t> expires_at;  // `exp`
  std::optional<std::int64_t> not_before;  // `nbf`
};

// Parses an introspection response. Errors: invalid_argument when it is not a JSON
// object or `active` is not a boolean (the AS's fault: the token stays undecided).
Result<IntrospectedToken> parse_introspection(std::string_view json);

// What a resource server requires of an introspected token.
struct IntrospectionRules {
  std::vector<std::string> issuers;  // `iss`, when present, must be one; the first is the default
  std::string audience;              // `aud`, when present, must contain it
  std::vector<std::string> scopes;   // each must be granted
  std::chrono::seconds skew{60};
};

// The table at the top of this file.
std::variant<AccessClaims, TokenRefusal> check_introspected(const IntrospectedToken& token,
                                                             const IntrospectionRules& rules,
                                                             std::chrono::system_clock::time_point now);

struct IntrospectionSettings {
  // The AS's introspection endpoint: https, or http to loopback (or with fetch.allow_http).
  std::string url;
  // dorm's own credentials at the AS, sent as HTTP Basic (RFC 6749 §2.3.1).
  std::string client_id;
  std::string client_secret;
  // An answer is remembered at most this long (an active token also no longer than its
  // `exp`): a revocation at the AS takes up to this long to reach dorm.
  std::chrono::seconds cache_ttl{60};
  std::size_t cache_size = 4096;
  // Tokens waiting for an introspection at most; more are answered unavailable at once.
  std::size_t max_waiting = 1024;
  // Introspections in flight at once (each thread blocks on one exchange).
  std::size_t threads = 4;
  FetchOptions fetch;
};

class TokenIntrospector {
 public:
  // One exchange: POST `form` with `authorization` to `url`, the 200 answer's body. The
  // default is http_post_form with settings.fetch; tests pass their own.
  using Post = std::function<Result<std::string>(const std::string& url, const std::string& form,
                                                 const std::string& authorization)>;
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  // An answer, or why there is none (the AS unreachable or its answer unusable).
  using Answer = Result<IntrospectedToken>;
  using Done = std::function<void(Answer)>;

  // Checks the settings (an absolute http(s) URL that http_post_form would fetch, a client
  // id and secret, at least one thread) and starts the threads. Errors: invalid_argument.
  static Result<std::unique_ptr<TokenIntrospector>> start(IntrospectionSettings settings, Post post = {},
                                                          Clock clock = {});
  ~TokenIntrospector();  // stop()
  TokenIntrospector(const TokenIntrospector&) = delete;
  TokenIntrospector& operator=(const TokenIntrospector&) = delete;

  // The remembered answer for `token`, if there is one still fresh.
  std::optional<IntrospectedToken> cached(std::string_view token) const;

  // The answer for `token`: at once when remembered, else after an introspection, on one
  // of this class's threads. `done` runs exactly once. Never blocks on I/O.
  void introspect(std::string_view token, Done done);

  // Ends the threads (an exchange under way ends within its timeout); whatever still
  // waits is answered with an error. Idempotent.
  void stop();

  // Introspection requests sent to the AS so far (for tests and logs).
  std::size_t requests() const;

 private:
  struct State;
  explicit TokenIntrospector(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace dorm::mcp
