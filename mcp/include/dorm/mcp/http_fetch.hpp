// A small HTTP(S) GET client for the few documents a resource server reads from its
// authorization server: the server metadata (RFC 8414 / OpenID Connect discovery) and the
// JWKS. It blocks the calling thread for up to FetchOptions::timeout, so it runs on a
// thread of its own (OAuthResource's fetch thread), never on an HTTP or actor thread.
// Boost.Beast and Asio's SSL stay inside http_fetch.cpp (heavy headers).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "dorm/result.hpp"

namespace dorm::mcp {

struct FetchOptions {
  // The whole exchange — resolve, connect, TLS handshake, request, response — must end
  // within this.
  std::chrono::milliseconds timeout{5'000};
  // A metadata document or JWKS bigger than this is refused (a JWKS is a few KiB).
  std::size_t max_body_bytes = 1u << 20;
  // Plain http:// to a host that is not loopback. Off: such a document could be changed
  // by anyone on the path, and with it the keys this server trusts.
  bool allow_http = false;
};

// The body of a 200 answer to GET `url`. https:// URLs are verified against the system's
// trust store, with the host name checked; http:// only to a loopback host or with
// allow_http. Errors: invalid_argument for a URL this refuses (another scheme, http to a
// remote host), io_error for a failed exchange, a non-200 status or an oversized body,
// each naming the URL.
Result<std::string> http_get(const std::string& url, const FetchOptions& options);

}  // namespace dorm::mcp
