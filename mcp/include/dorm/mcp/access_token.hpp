// JWT access tokens (RFC 9068) and the key sets that verify them (JWKS, RFC 7517).
//
// An OAuth authorization server signs the access tokens it issues with a private key and
// publishes the public halves as a JWKS. check_access_token decides, from the token, the
// key set and the rules of this resource server alone — no I/O, no clock of its own —
// whether the token lets its bearer in, and as whom. The checks, in order, each with the
// refusal it gives (TokenRefusal::Kind):
//
//   malformed           not three base64url parts, a part not JSON, a header with `crit`
//   wrong_type          `typ` is not "at+jwt" (RFC 9068 §4: an ID token is no access token);
//                       with TokenRules::accept_plain_jwt also "JWT" or none at all
//   unsupported_alg     `alg` is "none" or one this server does not verify
//   unknown_key         no key in the set has the header's `kid` (the caller may refresh
//                       the set and try again: the server may have rotated its keys)
//   alg_mismatch        the key is for another algorithm than the header names; the
//                       algorithm is always the key's, so a token cannot pick a weaker one
//   bad_signature       the signature does not verify with the key
//   wrong_issuer        `iss` is not exactly the configured issuer
//   wrong_audience      `aud` (a string or an array) does not contain this server's URI:
//                       a token minted for another server is never accepted here
//   expired             now is at or after `exp` + skew (`exp` is required)
//   not_yet_valid       now is before `nbf` - skew
//   missing_subject     no `sub`
//   insufficient_scope  a required scope is not in `scope` (space-separated) or `scp`
//
// Only the last one is a 403 (the token is good, it just does not allow this); every
// other one is a 401 with error="invalid_token". Signatures are verified with OpenSSL 3's
// EVP interface: RS256 (RSA keys of 2048 bits or more), ES256 (P-256) and EdDSA (Ed25519).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::mcp {

// One parsed JWKS: the verification keys this server can use, by `kid`. Keys it cannot
// use (another key type or curve, `use` other than "sig", an RSA modulus under 2048 bits)
// are skipped silently: a JWKS often holds encryption keys too. A key that looks usable
// but is malformed (an "n" that is not base64url, a point not on the curve) is skipped
// too, with the reason kept in skipped(): RFC 7517 §5 asks that a set's other keys stay
// usable, so one bad entry published by the authorization server does not lock every
// client out. Immutable once parsed; safe to share between threads.
class KeySet {
 public:
  struct Key;  // the OpenSSL key and its algorithm; defined in access_token.cpp

  // Parses a JWKS document ({"keys": [...]}). Errors: invalid_argument when it is not
  // JSON or has no "keys" array.
  static Result<KeySet> parse(std::string_view jwks_json);

  // Why each malformed key was skipped ("key 2: \"n\" is not base64url"), for the log.
  const std::vector<std::string>& skipped() const { return skipped_; }

  // The key with this `kid`, or null. With an empty `kid` (a token header without one),
  // the only key of the set when it has exactly one, else null.
  const Key* find(std::string_view kid) const;

  std::size_t size() const { return keys_.size(); }

 private:
  std::vector<std::shared_ptr<const Key>> keys_;
  std::vector<std::string> skipped_;
};

// What a resource server requires of a token.
struct TokenRules {
  std::string issuer;                 // `iss`, compared exactly
  std::string audience;               // must be one of `aud`
  std::vector<std::string> scopes;    // each must be granted
  std::chrono::seconds skew{60};      // tolerance for `exp` and `nbf` (clocks differ)
  // Also take tokens whose `typ` is "JWT" or absent. Keycloak and Microsoft Entra issue
  // such access tokens; RFC 9068 §4 wants at+jwt so that an ID token (signed by the same
  // keys) is never taken for an access token. With this on, `aud` is what keeps ID tokens
  // out (theirs is the client's id, not this server's URI): docs/auth.md.
  bool accept_plain_jwt = false;
};

// Who a valid token speaks for.
struct AccessClaims {
  std::string issuer;
  std::string subject;
  std::string client_id;  // `client_id`, empty when absent
  std::vector<std::string> scopes;
  std::int64_t expires_at = 0;  // `exp`, seconds since the epoch
};

struct TokenRefusal {
  enum class Kind {
    malformed,
    wrong_type,
    unsupported_alg,
    unknown_key,
    alg_mismatch,
    bad_signature,
    wrong_issuer,
    wrong_audience,
    expired,
    not_yet_valid,
    missing_subject,
    insufficient_scope,
    inactive,  // RFC 7662 introspection answered `"active": false` (token_introspection.hpp)
  };
  Kind kind = Kind::malformed;
  std::string message;  // for the client's error_description and the log; names no secret
};

// The snake_case name of a refusal kind, for logs and metrics ("unknown_key").
std::string_view to_string(TokenRefusal::Kind kind);

// The table at the top of this file, with `now` as the current time.
std::variant<AccessClaims, TokenRefusal> check_access_token(
    std::string_view token, const KeySet& keys, const TokenRules& rules,
    std::chrono::system_clock::time_point now);

// The `kid` of a token's header (empty when it has none), or nullopt when the header is
// not a JSON object in base64url: lets a caller decide to refresh keys before checking.
std::optional<std::string> token_key_id(std::string_view token);

// The `iss` claim of a token, unverified (empty when it has none), or nullopt when the
// token is not a JWT: picks which authorization server's keys are to verify it, after
// which check_access_token compares `iss` again against the verified claims.
std::optional<std::string> token_issuer(std::string_view token);

// base64url without padding (RFC 7515 §2) — decode refuses padding, whitespace and any
// character outside the alphabet.
std::optional<std::string> base64url_decode(std::string_view text);
std::string base64url_encode(std::string_view bytes);

}  // namespace dorm::mcp
