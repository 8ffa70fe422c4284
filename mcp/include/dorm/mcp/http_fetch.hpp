// A small HTTP(S) client for what a resource server asks of its authorization server:
// GETs of the server metadata (RFC 8414 / OpenID Connect discovery) and the JWKS, and
// POSTs to the token introspection endpoint (RFC 7662). It blocks the calling thread for up to FetchOptions::timeout, so it runs on a
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
  // A PEM file of the certificate authorities that https:// servers' certificates must
  // chain to, instead of the system's trust store (an AS with a private CA). Empty: the
  // system's store.
  std::string ca_file;
};

// The body of a 200 answer to GET `url`. https:// URLs are verified against the system's
// trust store (or options.ca_file), with the host name checked; http:// only to a loopback host or with
// allow_http. Errors: invalid_argument for a URL this refuses (another scheme, http to a
// remote host), io_error for a failed exchange, a non-200 status, an oversized body or an
// unreadable ca_file, each naming the URL.
Result<std::string> http_get(const std::string& url, const FetchOptions& options);

// As http_get, for a POST of `form` (application/x-www-form-urlencoded, already encoded)
// with `authorization` as the Authorization header (none when empty): RFC 7662 token
// introspection. A status other than 200 is an io_error naming it.
Result<std::string> http_post_form(const std::string& url, std::string form, std::string authorization,
                                   const FetchOptions& options);

}  // namespace dorm::mcp
