// The checks every `/mcp` request passes before it reaches a session, and the HTTP
// answers for the ones it fails.
//
// check_request looks only at the method and headers — no body, no storage, no session —
// so it runs on the HTTP thread before anything else happens. The order is fixed, and
// the first failing check answers:
//
//   405  method other than GET, POST, DELETE             (Allow: GET, POST, DELETE)
//   400  a single-valued header (kSingleValuedHeaders) sent more than once
//   401  bearer token missing or unknown, when a token file is configured
//                                                         (WWW-Authenticate: Bearer ...)
//   403  Origin present and not allowed
//   403  Host missing or not allowed
//   406  POST not accepting both application/json and text/event-stream;
//        GET not accepting text/event-stream
//   415  POST whose Content-Type is not application/json (UTF-8)
//   400  MCP-Protocol-Version present and not supported (not checked on initialize)
//   404  MCP-Session-Id present but not even plausible (it can name no session)
//
// The first five rows are check_caller: who is calling and from where. They need nothing
// from the body, so the HTTP layer runs them once the header is read and before the body
// is (an unauthenticated caller costs no body read or parse); the body limit comes next
// (413), then check_request with the parsed body. Authentication comes before the rest so
// that an unauthenticated caller learns nothing more about the server than that it needs
// a token. The later, stateful answers — session missing
// (400) or unknown (404), body too large (413), a batch the session's version forbids,
// a request before initialize — are built by the Rejection factories below so every
// error response of the transport has the same shape: a JSON-RPC error response with
// `"id": null`, code -32000 (or -32001 for an unknown session, -32600/-32700 for a bad
// body), and a message that says what to do.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/jsonrpc.hpp"

namespace dorm::mcp {

// Headers (lower-case names) that take one value and decide who is calling, which
// session a request names or how its body is framed. Sent twice, no reading of them is
// safe: a proxy or a check may look at one line and the code after it at the other, so
// such a request is refused (400) instead of being guessed at.
inline constexpr std::array<std::string_view, 5> kSingleValuedHeaders = {
    "host", "origin", "content-length", "mcp-session-id", "authorization"};

// What check_request needs to know about a request. Each header is nullopt when absent.
// A header that occurs several times is passed as its values joined with ", " (RFC 9110
// §5.3): for Accept that is the same list; for another header that takes one value
// (Content-Type, MCP-Protocol-Version) the joined text is malformed and fails its check;
// one of kSingleValuedHeaders sent twice is named in `repeated_header` and refused.
struct RequestFacts {
  std::string_view method;  // "GET", "POST", ... (case-sensitive, as HTTP methods are)
  std::optional<std::string_view> accept;
  std::optional<std::string_view> content_type;
  std::optional<std::string_view> origin;
  std::optional<std::string_view> host;
  std::optional<std::string_view> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string_view> authorization;
  std::optional<std::string_view> session_id;  // MCP-Session-Id
  // The first of kSingleValuedHeaders that came on more than one header line, if any.
  std::optional<std::string_view> repeated_header;
  // The POST body is an `initialize` request. Its MCP-Protocol-Version header is not
  // checked: some clients send the revision they are about to propose, and initialize
  // negotiates it. Leave false when the body has not been parsed yet.
  bool initialize = false;
};

// The server's configuration for check_request.
struct CheckPolicy {
  // The token file, or null for single-user mode (every request acts as {"local", ""}).
  // Not owned; must outlive every check_request call that uses this policy.
  const AuthTokens* tokens = nullptr;
  // Extra origins ("scheme://host[:port]") and hosts ("name" or "name:port") allowed
  // besides the loopback ones; see dns_rebinding.hpp.
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;
};

// An HTTP error answer, ready to send.
struct Rejection {
  int http_status = 400;
  // Every header the response needs besides Content-Length (Content-Type included).
  std::vector<std::pair<std::string, std::string>> headers;
  // A JSON-RPC error response (compact JSON).
  std::string body;
  // A stable snake_case tag for logs and metrics, e.g. "origin_not_allowed".
  std::string_view reason;

  // 400, -32000: a request other than initialize came without MCP-Session-Id.
  static Rejection missing_session();
  // 404, -32001 "Session not found": the session is unknown, ended, or belongs to another
  // identity (the same answer in each case, so a caller learns nothing).
  static Rejection unknown_session();
  // 413, -32000, naming the limit and, when known, the body's size.
  static Rejection payload_too_large(std::size_t limit_bytes,
                                     std::optional<std::size_t> actual_bytes = std::nullopt);
  // 400, -32600: a JSON array body from a session whose revision does not allow batches.
  static Rejection bad_batch();
  // 400, -32000: a request without a session that is not initialize (e.g. the
  // `server/discover` probe of 2026-07-28 clients, or a GET before initialize). An
  // ordinary error on purpose: never one of -32020..-32022, which make those clients give
  // up instead of falling back to initialize.
  static Rejection pre_initialize();
  // 400 with the failure's code (-32700 or -32600), message and id.
  static Rejection invalid_body(const ParseFailure& failure);
  // 507 Insufficient Storage with `Retry-After: 10`, -32000 and data.reason "no_space":
  // the server's storage is full, so the request was refused before anything ran and
  // nothing was changed; the same request may be sent again once space is freed.
  static Rejection storage_full();

  // The answers check_request gives, for callers that need one directly.
  static Rejection method_not_allowed();
  // 400, -32000: `name` (one of kSingleValuedHeaders) was sent more than once.
  static Rejection repeated_header(std::string_view name);
  // `token_presented`: a bearer token was sent but is unknown (error="invalid_token").
  static Rejection unauthorized(bool token_presented);
  static Rejection origin_not_allowed(std::string_view origin);
  static Rejection host_not_allowed(std::optional<std::string_view> host);
  // `method` is "POST" or "GET"; the message names the media types that one needs.
  static Rejection not_acceptable(std::string_view method);
  static Rejection unsupported_media_type();
  static Rejection unsupported_protocol_version(std::string_view version);
};

// The identity a request acts as, or the answer that refuses it, from the checks that
// need no body: method, repeated single-valued header, token, Origin, Host (the first
// five rows of the table at the top of this file). `facts.initialize` is not read.
// Pure: no I/O beyond reading policy.tokens' current set.
std::variant<Identity, Rejection> check_caller(const RequestFacts& facts,
                                               const CheckPolicy& policy);

// The identity a request acts as, or the answer that refuses it: check_caller, then the
// rest of the table. Pure, as check_caller.
std::variant<Identity, Rejection> check_request(const RequestFacts& facts,
                                                const CheckPolicy& policy);

}  // namespace dorm::mcp
