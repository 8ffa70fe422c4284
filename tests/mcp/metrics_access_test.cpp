// refuse_scrape: who may read GET /metrics, row by row of metrics_access.hpp's table.
#include "dorm/mcp/metrics_access.hpp"

#include <doctest/doctest.h>
#include <openssl/sha.h>

#include <fstream>
#include <string>

#include "temp_dir.hpp"

using dorm::mcp::AuthTokens;
using dorm::mcp::HttpRequest;
using dorm::mcp::MetricsAccessPolicy;
using dorm::mcp::refuse_scrape;

namespace {

std::string sha256_hex(std::string_view token) {
  unsigned char digest[32];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  std::string out;
  for (unsigned char b : digest) {
    out += "0123456789abcdef"[b >> 4];
    out += "0123456789abcdef"[b & 15];
  }
  return out;
}

// A metrics token file holding `token`.
std::unique_ptr<AuthTokens> tokens_with(const dorm::testing::TempDir& dir, std::string_view token) {
  std::string path = dir / "metrics-tokens.json";
  std::ofstream(path) << R"([{"sha256":")" << sha256_hex(token) << R"(","user":"prometheus"}])";
  auto opened = AuthTokens::open(path);
  REQUIRE(opened.ok());
  return std::move(opened).value();
}

HttpRequest scrape(bool loopback,
                   std::vector<HttpRequest::Field> headers = {{"host", "127.0.0.1:8808", 1}}) {
  HttpRequest r;
  r.method = "GET";
  r.target = "/metrics";
  r.headers = std::move(headers);
  r.peer = loopback ? "127.0.0.1" : "10.1.2.3";
  r.peer_loopback = loopback;
  return r;
}

int status(const std::optional<dorm::mcp::HttpResponse>& refusal) {
  return refusal ? refusal->status : 200;
}

std::string header(const dorm::mcp::HttpResponse& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return {};
}

}  // namespace

TEST_CASE(
    "metrics access: a loopback peer scrapes without credentials; a remote one needs a token") {
  dorm::testing::TempDir dir;
  auto tokens = tokens_with(dir, "scrape-secret");
  MetricsAccessPolicy open_locally;  // no token file
  MetricsAccessPolicy with_tokens{tokens.get(), {}, {}};

  CHECK(status(refuse_scrape(scrape(true), open_locally)) == 200);
  CHECK(status(refuse_scrape(scrape(true), with_tokens)) == 200);

  // From elsewhere, no token: 403 when there is no token file (it cannot be opened at all),
  // 401 with a challenge when a token would let it in.
  auto no_file = refuse_scrape(scrape(false), open_locally);
  CHECK(status(no_file) == 403);
  CHECK(no_file->body.find("--metrics-tokens") != std::string::npos);
  auto challenge = refuse_scrape(scrape(false), with_tokens);
  CHECK(status(challenge) == 401);
  CHECK(header(*challenge, "WWW-Authenticate") == R"(Bearer realm="dorm-metrics")");

  // The right token opens it from anywhere, whatever the Host.
  auto remote = scrape(
      false, {{"host", "metrics.internal:8808", 1}, {"authorization", "Bearer scrape-secret", 1}});
  CHECK(status(refuse_scrape(remote, with_tokens)) == 200);
  // A wrong token, another scheme, or a token with no token file: 401 invalid_token, also
  // from loopback (a credential that was sent is checked).
  for (const char* value : {"Bearer wrong", "Basic c2NyYXBlOnNlY3JldA==", "Bearer"}) {
    auto bad = refuse_scrape(scrape(true, {{"host", "127.0.0.1", 1}, {"authorization", value, 1}}),
                             with_tokens);
    CHECK(status(bad) == 401);
    CHECK(header(*bad, "WWW-Authenticate").find("invalid_token") != std::string::npos);
  }
  CHECK(status(refuse_scrape(remote, open_locally)) == 401);
}

TEST_CASE("metrics access: on the loopback path Host and Origin must be allowed (DNS rebinding)") {
  MetricsAccessPolicy policy;
  CHECK(status(refuse_scrape(scrape(true, {{"host", "evil.example:8808", 1}}), policy)) == 403);
  CHECK(status(refuse_scrape(scrape(true, {}), policy)) == 403);  // no Host at all
  CHECK(status(refuse_scrape(
            scrape(true, {{"host", "localhost:8808", 1}, {"origin", "http://evil.example", 1}}),
            policy)) == 403);
  CHECK(status(refuse_scrape(
            scrape(true, {{"host", "localhost:8808", 1}, {"origin", "http://localhost:3000", 1}}),
            policy)) == 200);
  // --allowed-hosts extends the loopback names.
  policy.allowed_hosts = {"dorm.internal"};
  CHECK(status(refuse_scrape(scrape(true, {{"host", "dorm.internal:8808", 1}}), policy)) == 200);
}

TEST_CASE("metrics access: only GET and HEAD; a credential or Host sent twice is refused") {
  MetricsAccessPolicy policy;
  auto post = scrape(true);
  post.method = "POST";
  auto refused = refuse_scrape(post, policy);
  CHECK(status(refused) == 405);
  CHECK(header(*refused, "Allow") == "GET, HEAD");
  auto head = scrape(true);
  head.method = "HEAD";
  CHECK(status(refuse_scrape(head, policy)) == 200);
  CHECK(status(refuse_scrape(scrape(true, {{"host", "127.0.0.1, evil.example", 2}}), policy)) ==
        400);
  CHECK(status(refuse_scrape(
            scrape(true, {{"host", "127.0.0.1", 1}, {"authorization", "Bearer a, Bearer b", 2}}),
            policy)) == 400);
}
