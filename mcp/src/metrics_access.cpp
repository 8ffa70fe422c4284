#include "dorm/mcp/metrics_access.hpp"

#include "dorm/mcp/dns_rebinding.hpp"

namespace dorm::mcp {
namespace {

HttpResponse plain(int status, std::string body,
                   std::vector<std::pair<std::string, std::string>> extra = {}) {
  std::vector<std::pair<std::string, std::string>> headers{
      {"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}};
  for (auto& h : extra) headers.push_back(std::move(h));
  return HttpResponse{status, std::move(headers), std::move(body)};
}

HttpResponse unauthorized(bool token_presented) {
  // RFC 6750 §3.1: no error code when the request had no credentials at all.
  return plain(401,
               token_presented
                   ? "The bearer token is not one of the metrics tokens (--metrics-tokens).\n"
                   : "Scraping /metrics from another machine needs Authorization: Bearer "
                     "<token>, a token of the metrics token file (--metrics-tokens).\n",
               {{"WWW-Authenticate", token_presented
                                         ? R"(Bearer realm="dorm-metrics", error="invalid_token")"
                                         : R"(Bearer realm="dorm-metrics")"}});
}

}  // namespace

std::optional<HttpResponse> refuse_scrape(const HttpRequest& head,
                                          const MetricsAccessPolicy& policy) {
  if (head.method != "GET" && head.method != "HEAD") {
    return plain(405, "/metrics answers GET and HEAD only.\n", {{"Allow", "GET, HEAD"}});
  }
  for (const char* name : {"authorization", "host", "origin"}) {
    if (head.header_lines(name) > 1) {
      return plain(400, std::string("The ") + name + " header was sent more than once.\n");
    }
  }
  if (auto authorization = head.header("authorization")) {
    auto token = bearer_token(*authorization);
    if (!token || !policy.tokens || !policy.tokens->authenticate(*token)) {
      return unauthorized(true);
    }
    return std::nullopt;
  }
  if (!head.peer_loopback) {
    if (policy.tokens) return unauthorized(false);
    return plain(403,
                 "/metrics is served to callers on this machine (a loopback address) only; "
                 "start the server with --metrics-tokens FILE to let a scraper elsewhere in "
                 "with a bearer token.\n");
  }
  if (auto origin = head.header("origin");
      origin && !origin_allowed(*origin, policy.allowed_origins)) {
    return plain(403, "A request with this Origin may not read /metrics (--allowed-origins).\n");
  }
  auto host = head.header("host");
  if (!host || !host_allowed(*host, policy.allowed_hosts)) {
    return plain(403, "A request with this Host may not read /metrics (--allowed-hosts).\n");
  }
  return std::nullopt;
}

}  // namespace dorm::mcp
