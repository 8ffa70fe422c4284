#include "dorm/mcp/request_checks.hpp"

#include "dorm/mcp/dns_rebinding.hpp"
#include "dorm/mcp/media_type.hpp"
#include "dorm/mcp/protocol_version.hpp"
#include "dorm/mcp/session_id.hpp"

namespace dorm::mcp {
namespace {

// Header values quoted back in an error message are cut to this length and stripped to
// printable ASCII, so the body stays short, valid UTF-8 and safe to show.
constexpr std::size_t kShownHeaderChars = 128;

std::string shown(std::string_view value) {
  std::string out;
  for (char c : value.substr(0, kShownHeaderChars)) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (value.size() > kShownHeaderChars) out += "...";
  return out;
}

Rejection make(int status, int code, std::string_view message, std::string_view reason,
               std::optional<RequestId> id = std::nullopt) {
  Rejection r;
  r.http_status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = error_response(id, code, message);
  r.reason = reason;
  return r;
}

}  // namespace

Rejection Rejection::missing_session() {
  return make(400, kTransportError, "Bad Request: Mcp-Session-Id header is required",
              "missing_session");
}

Rejection Rejection::unknown_session() {
  return make(404, kSessionNotFound, "Session not found", "unknown_session");
}

Rejection Rejection::payload_too_large(std::size_t limit_bytes,
                                       std::optional<std::size_t> actual_bytes) {
  std::string message =
      "Payload Too Large: the body limit is " + std::to_string(limit_bytes) + " bytes";
  if (actual_bytes) message += ", this body has " + std::to_string(*actual_bytes);
  return make(413, kTransportError, message, "payload_too_large");
}

Rejection Rejection::bad_batch() {
  return make(400, kInvalidRequest,
              "Invalid Request: a JSON array (batch) body is accepted only on sessions that "
              "negotiated protocol version 2025-03-26; send one message per POST",
              "batch_not_allowed");
}

Rejection Rejection::pre_initialize() {
  return make(400, kTransportError, "Bad Request: no session; start one with an initialize request",
              "not_initialized");
}

Rejection Rejection::invalid_body(const ParseFailure& failure) {
  return make(400, failure.code, failure.message, "invalid_body", failure.id);
}

Rejection Rejection::storage_full() {
  Rejection r;
  r.http_status = 507;
  r.headers.emplace_back("Content-Type", "application/json");
  // Long enough that a crowd of clients does not hammer a full server, short enough that
  // they come back soon after an operator frees space.
  r.headers.emplace_back("Retry-After", "10");
  r.body = error_response(std::nullopt, kTransportError,
                          "Insufficient Storage: the server's storage is full, so this request "
                          "was not run and nothing was changed; send it again later",
                          R"({"reason":"no_space","retryAfterSeconds":10})");
  r.reason = "no_space";
  return r;
}

Rejection Rejection::method_not_allowed() {
  Rejection r = make(405, kTransportError, "Method Not Allowed: /mcp accepts GET, POST and DELETE",
                     "method_not_allowed");
  r.headers.emplace_back("Allow", "GET, POST, DELETE");
  return r;
}

Rejection Rejection::repeated_header(std::string_view name) {
  return make(400, kTransportError,
              "Bad Request: the " + shown(name) +
                  " header was sent more than once; it takes one value, so send it once",
              "repeated_header");
}

Rejection Rejection::unauthorized(bool token_presented) {
  // RFC 6750 §3.1: no error code when the request had no credentials at all.
  Rejection r = make(401, kTransportError,
                     token_presented ? "Unauthorized: the bearer token is not valid"
                                     : "Unauthorized: send Authorization: Bearer <token>",
                     token_presented ? "unknown_token" : "missing_token");
  r.headers.emplace_back("WWW-Authenticate", token_presented
                                                 ? R"(Bearer realm="dorm", error="invalid_token")"
                                                 : R"(Bearer realm="dorm")");
  return r;
}

Rejection Rejection::origin_not_allowed(std::string_view origin) {
  return make(403, kTransportError, "Forbidden: Origin '" + shown(origin) + "' is not allowed",
              "origin_not_allowed");
}

Rejection Rejection::host_not_allowed(std::optional<std::string_view> host) {
  return make(403, kTransportError,
              host ? "Forbidden: Host '" + shown(*host) + "' is not allowed"
                   : std::string("Forbidden: the Host header is missing"),
              "host_not_allowed");
}

Rejection Rejection::not_acceptable(std::string_view method) {
  return make(406, kTransportError,
              method == "GET" ? "Not Acceptable: Accept must include text/event-stream"
                              : "Not Acceptable: Accept must include both application/json and "
                                "text/event-stream",
              "not_acceptable");
}

Rejection Rejection::unsupported_media_type() {
  return make(415, kTransportError,
              "Unsupported Media Type: Content-Type must be application/json (UTF-8)",
              "unsupported_media_type");
}

Rejection Rejection::unsupported_protocol_version(std::string_view version) {
  return make(400, kTransportError,
              "Bad Request: unsupported MCP-Protocol-Version '" + shown(version) +
                  "' (supported versions: " + supported_versions_list() + ")",
              "unsupported_protocol_version");
}

std::variant<Identity, Rejection> check_caller(const RequestFacts& facts,
                                               const CheckPolicy& policy) {
  if (facts.method != "GET" && facts.method != "POST" && facts.method != "DELETE") {
    return Rejection::method_not_allowed();
  }
  if (facts.repeated_header) return Rejection::repeated_header(*facts.repeated_header);

  Identity identity{"local", ""};
  if (policy.tokens != nullptr) {
    auto token = facts.authorization ? bearer_token(*facts.authorization) : std::nullopt;
    if (!token) return Rejection::unauthorized(false);
    auto known = policy.tokens->authenticate(*token);
    if (!known) return Rejection::unauthorized(true);
    identity = std::move(*known);
  }

  if (facts.origin && !origin_allowed(*facts.origin, policy.allowed_origins)) {
    return Rejection::origin_not_allowed(*facts.origin);
  }
  if (!facts.host || !host_allowed(*facts.host, policy.allowed_hosts)) {
    return Rejection::host_not_allowed(facts.host);
  }
  return identity;
}

std::variant<Identity, Rejection> check_request(const RequestFacts& facts,
                                                const CheckPolicy& policy) {
  auto caller = check_caller(facts, policy);
  if (std::holds_alternative<Rejection>(caller)) return caller;

  const bool get = facts.method == "GET";
  const bool post = facts.method == "POST";
  if (post || get) {
    std::string_view accept = facts.accept.value_or("");
    bool acceptable = accept_allows(accept, "text/event-stream") &&
                      (get || accept_allows(accept, "application/json"));
    if (!acceptable) return Rejection::not_acceptable(facts.method);
  }
  if (post && !(facts.content_type && is_json_content_type(*facts.content_type))) {
    return Rejection::unsupported_media_type();
  }

  if (facts.protocol_version && !facts.initialize && !is_supported(*facts.protocol_version)) {
    return Rejection::unsupported_protocol_version(*facts.protocol_version);
  }
  // An id that could never have been issued names no session: the same answer as an
  // unknown one, given before the id reaches any lookup.
  if (facts.session_id && !plausible_session_id(*facts.session_id)) {
    return Rejection::unknown_session();
  }
  return caller;
}

}  // namespace dorm::mcp
