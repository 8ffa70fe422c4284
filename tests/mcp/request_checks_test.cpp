#include "dorm/mcp/request_checks.hpp"

#include <doctest/doctest.h>
#include <openssl/sha.h>
#include <rapidjson/document.h>

#include <fstream>
#include <string>

#include "temp_dir.hpp"

using namespace dorm::mcp;

namespace {

// A POST that passes every check in single-user mode.
RequestFacts good_post() {
  RequestFacts f;
  f.method = "POST";
  f.accept = "application/json, text/event-stream";
  f.content_type = "application/json";
  f.host = "127.0.0.1:8808";
  return f;
}

RequestFacts good_get() {
  RequestFacts f;
  f.method = "GET";
  f.accept = "text/event-stream";
  f.host = "localhost:8808";
  return f;
}

Rejection rejected(const RequestFacts& facts, const CheckPolicy& policy = {}) {
  auto r = check_request(facts, policy);
  REQUIRE(std::holds_alternative<Rejection>(r));
  return std::get<Rejection>(std::move(r));
}

Identity accepted(const RequestFacts& facts, const CheckPolicy& policy = {}) {
  auto r = check_request(facts, policy);
  if (auto* no = std::get_if<Rejection>(&r)) FAIL_CHECK("rejected: " << no->body);
  REQUIRE(std::holds_alternative<Identity>(r));
  return std::get<Identity>(std::move(r));
}

std::string header(const Rejection& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "<absent>";
}

// The body is a JSON-RPC error response with a null id (unless one is expected) and the
// given code; returns its message.
std::string error_message(const Rejection& r, int code) {
  rapidjson::Document doc;
  doc.Parse(r.body.data(), r.body.size());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc.IsObject());
  CHECK(std::string_view(doc["jsonrpc"].GetString()) == "2.0");
  CHECK(doc.HasMember("id"));
  CHECK(doc["error"]["code"].GetInt() == code);
  CHECK(header(r, "Content-Type") == "application/json");
  return doc["error"]["message"].GetString();
}

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

}  // namespace

TEST_CASE("request checks: good requests in single-user mode act as local") {
  CHECK(accepted(good_post()) == Identity{"local", ""});
  CHECK(accepted(good_get()) == Identity{"local", ""});
  RequestFacts del;
  del.method = "DELETE";
  del.host = "[::1]:1";
  CHECK(accepted(del) == Identity{"local", ""});
  // In single-user mode an Authorization header is ignored.
  RequestFacts with_auth = good_post();
  with_auth.authorization = "Bearer whatever";
  CHECK(accepted(with_auth) == Identity{"local", ""});
}

TEST_CASE("request checks: 405 for other methods, with Allow") {
  for (std::string_view m : {"PUT", "PATCH", "HEAD", "OPTIONS", "post", "Get", ""}) {
    CAPTURE(m);
    RequestFacts f = good_post();
    f.method = m;
    Rejection r = rejected(f);
    CHECK(r.http_status == 405);
    CHECK(header(r, "Allow") == "GET, POST, DELETE");
    CHECK(r.reason == "method_not_allowed");
    error_message(r, kTransportError);
  }
}

TEST_CASE("request checks: bearer tokens when a token file is configured") {
  dorm::testing::TempDir dir;
  {
    std::ofstream out(dir / "tokens.json");
    out << R"([{"sha256":")" << sha256_hex("s3cret") << R"(","user":"alice","org":"acme"}])";
  }
  auto tokens = AuthTokens::open(dir / "tokens.json");
  REQUIRE(tokens.ok());
  CheckPolicy policy;
  policy.tokens = tokens->get();

  RequestFacts f = good_post();
  f.authorization = "Bearer s3cret";
  CHECK(accepted(f, policy) == Identity{"alice", "acme"});
  f.authorization = "bearer   s3cret";
  CHECK(accepted(f, policy) == Identity{"alice", "acme"});

  SUBCASE("missing or not a bearer token: 401 without an error code") {
    for (std::optional<std::string_view> auth :
         {std::optional<std::string_view>{}, std::optional<std::string_view>{""},
          std::optional<std::string_view>{"Basic czNjcmV0"},
          std::optional<std::string_view>{"Bearer "}, std::optional<std::string_view>{"s3cret"}}) {
      RequestFacts g = good_post();
      g.authorization = auth;
      Rejection r = rejected(g, policy);
      CHECK(r.http_status == 401);
      CHECK(header(r, "WWW-Authenticate") == R"(Bearer realm="dorm")");
      CHECK(r.reason == "missing_token");
      error_message(r, kTransportError);
    }
  }
  SUBCASE("unknown token: 401 invalid_token") {
    for (const std::string& auth :
         {std::string("Bearer wrong"), std::string("Bearer s3cret2"), std::string("Bearer S3CRET"),
          "Bearer " + std::string(64, 'a')}) {
      RequestFacts g = good_post();
      g.authorization = auth;
      Rejection r = rejected(g, policy);
      CHECK(r.http_status == 401);
      CHECK(header(r, "WWW-Authenticate").starts_with("Bearer "));
      CHECK(header(r, "WWW-Authenticate").find(R"(error="invalid_token")") != std::string::npos);
      CHECK(r.reason == "unknown_token");
    }
  }
  SUBCASE("authentication comes before every other check but the method") {
    RequestFacts g;
    g.method = "POST";  // no host, no accept, bad everything
    g.origin = "http://evil.example";
    CHECK(rejected(g, policy).http_status == 401);
    g.method = "PUT";
    CHECK(rejected(g, policy).http_status == 405);
  }
}

TEST_CASE("request checks: Origin and Host (DNS rebinding)") {
  RequestFacts f = good_post();
  f.origin = "http://evil.example.com";
  Rejection r = rejected(f);
  CHECK(r.http_status == 403);
  CHECK(r.reason == "origin_not_allowed");
  CHECK(error_message(r, kTransportError).find("http://evil.example.com") != std::string::npos);

  f.origin = "http://127.0.0.1:8808";
  CHECK(accepted(f) == Identity{"local", ""});

  // The conformance tool's attack: bad Host and bad Origin.
  f.host = "evil.example.com";
  f.origin = "http://evil.example.com";
  CHECK(rejected(f).http_status == 403);

  f = good_post();
  f.host = "evil.example.com";
  r = rejected(f);
  CHECK(r.http_status == 403);
  CHECK(r.reason == "host_not_allowed");
  CHECK(error_message(r, kTransportError).find("evil.example.com") != std::string::npos);

  f.host.reset();
  r = rejected(f);
  CHECK(r.http_status == 403);
  CHECK(error_message(r, kTransportError).find("missing") != std::string::npos);

  CheckPolicy policy;
  policy.allowed_hosts = {"mcp.example.com"};
  policy.allowed_origins = {"https://app.example.com"};
  f = good_post();
  f.host = "mcp.example.com";
  f.origin = "https://app.example.com";
  CHECK(accepted(f, policy) == Identity{"local", ""});
  f.origin = "https://other.example.com";
  CHECK(rejected(f, policy).http_status == 403);

  // Header values quoted in the body are cut short and stripped to printable ASCII.
  f = good_post();
  std::string long_origin = "http://" + std::string(500, 'x') + "\x01\xff";
  f.origin = long_origin;
  std::string message = error_message(rejected(f), kTransportError);
  CHECK(message.size() < 250);
  CHECK(message.find("...") != std::string::npos);
  f.origin = "http://e\x01\xff";
  CHECK(error_message(rejected(f), kTransportError).find("http://e??") != std::string::npos);
}

TEST_CASE("request checks: 406 for Accept, per method") {
  for (std::optional<std::string_view> accept :
       {std::optional<std::string_view>{}, std::optional<std::string_view>{""},
        std::optional<std::string_view>{"application/json"},
        std::optional<std::string_view>{"text/event-stream"},
        std::optional<std::string_view>{"text/*"},
        std::optional<std::string_view>{"*/*, text/event-stream;q=0"}}) {
    RequestFacts f = good_post();
    f.accept = accept;
    Rejection r = rejected(f);
    CHECK(r.http_status == 406);
    CHECK(r.reason == "not_acceptable");
    CHECK(error_message(r, kTransportError).find("application/json and text/event-stream") !=
          std::string::npos);
  }
  RequestFacts post = good_post();
  post.accept = "*/*";
  CHECK(accepted(post) == Identity{"local", ""});

  RequestFacts get = good_get();
  get.accept = "application/json";
  Rejection r = rejected(get);
  CHECK(r.http_status == 406);
  CHECK(error_message(r, kTransportError).find("text/event-stream") != std::string::npos);
  get.accept.reset();
  CHECK(rejected(get).http_status == 406);
  get.accept = "text/*";
  CHECK(accepted(get) == Identity{"local", ""});

  // DELETE does not look at Accept or Content-Type.
  RequestFacts del = good_get();
  del.method = "DELETE";
  del.accept = "image/png";
  del.content_type = "text/plain";
  CHECK(accepted(del) == Identity{"local", ""});
}

TEST_CASE("request checks: 415 for a POST body that is not JSON") {
  for (std::optional<std::string_view> type :
       {std::optional<std::string_view>{}, std::optional<std::string_view>{"text/plain"},
        std::optional<std::string_view>{"application/json; charset=latin1"},
        std::optional<std::string_view>{"application/x-www-form-urlencoded"}}) {
    RequestFacts f = good_post();
    f.content_type = type;
    Rejection r = rejected(f);
    CHECK(r.http_status == 415);
    CHECK(r.reason == "unsupported_media_type");
    error_message(r, kTransportError);
  }
  RequestFacts f = good_post();
  f.content_type = "Application/JSON; charset=UTF-8";
  CHECK(accepted(f) == Identity{"local", ""});
  // GET carries no body: its Content-Type is not checked.
  RequestFacts get = good_get();
  get.content_type = "text/plain";
  CHECK(accepted(get) == Identity{"local", ""});
}

TEST_CASE("request checks: 400 for an unsupported MCP-Protocol-Version") {
  for (std::string_view v : {"2025-11-25", "2025-06-18", "2025-03-26"}) {
    RequestFacts f = good_post();
    f.protocol_version = v;
    CHECK(accepted(f) == Identity{"local", ""});
  }
  for (std::string_view v : {"1999-01-01", "", "2026-07-28", "2025-11-25 "}) {
    CAPTURE(v);
    RequestFacts f = good_get();
    f.protocol_version = v;
    Rejection r = rejected(f);
    CHECK(r.http_status == 400);
    CHECK(r.reason == "unsupported_protocol_version");
    std::string message = error_message(r, kTransportError);
    CHECK(message.find("2025-11-25, 2025-06-18, 2025-03-26") != std::string::npos);
  }
  // Not checked on initialize: the client may send the revision it proposes.
  RequestFacts init = good_post();
  init.protocol_version = "2026-07-28";
  init.initialize = true;
  CHECK(accepted(init) == Identity{"local", ""});
}

TEST_CASE("request checks: an implausible session id is an unknown session") {
  RequestFacts f = good_post();
  f.session_id = "0123456789abcdef0123456789abcdef";
  CHECK(accepted(f) == Identity{"local", ""});
  for (std::string_view id : {"", "short", "has space in it, and long enough"}) {
    f.session_id = id;
    Rejection r = rejected(f);
    CHECK(r.http_status == 404);
    CHECK(error_message(r, kSessionNotFound) == "Session not found");
  }
}

TEST_CASE("request checks: the first failing check answers") {
  RequestFacts f;
  f.method = "POST";
  f.origin = "http://evil.example";
  f.host = "evil.example";
  f.protocol_version = "bad";
  CHECK(rejected(f).reason == "origin_not_allowed");
  f.origin.reset();
  CHECK(rejected(f).reason == "host_not_allowed");
  f.host = "localhost";
  CHECK(rejected(f).reason == "not_acceptable");
  f.accept = "application/json, text/event-stream";
  CHECK(rejected(f).reason == "unsupported_media_type");
  f.content_type = "application/json";
  CHECK(rejected(f).reason == "unsupported_protocol_version");
  f.protocol_version = "2025-11-25";
  f.session_id = "x";
  CHECK(rejected(f).reason == "unknown_session");
  f.session_id.reset();
  CHECK(accepted(f) == Identity{"local", ""});
}

TEST_CASE("request checks: a single-valued header sent twice is 400, before the token is looked at") {
  dorm::testing::TempDir dir;
  {
    std::ofstream out(dir / "tokens.json");
    out << R"([{"sha256":")" << sha256_hex("s3cret") << R"(","user":"alice","org":"acme"}])";
  }
  auto tokens = AuthTokens::open(dir / "tokens.json");
  REQUIRE(tokens.ok());
  CheckPolicy policy;
  policy.tokens = tokens->get();
  for (std::string_view name : kSingleValuedHeaders) {
    CAPTURE(name);
    RequestFacts f = good_post();
    f.authorization = "Bearer s3cret";
    f.repeated_header = name;
    Rejection r = rejected(f, policy);
    CHECK(r.http_status == 400);
    CHECK(r.reason == "repeated_header");
    std::string message = error_message(r, kTransportError);
    CHECK(message.find(std::string(name) + " header was sent more than once") != std::string::npos);
    // Even without a token: a request that cannot be read one way is refused as such.
    f.authorization.reset();
    CHECK(rejected(f, policy).reason == "repeated_header");
  }
  // The method still comes first.
  RequestFacts put = good_post();
  put.method = "PUT";
  put.repeated_header = "host";
  CHECK(rejected(put).reason == "method_not_allowed");
}

TEST_CASE("request checks: another single-valued header sent twice arrives joined and fails its own check") {
  RequestFacts f = good_post();
  f.content_type = "application/json, application/json";
  CHECK(rejected(f).reason == "unsupported_media_type");
  f = good_post();
  f.protocol_version = "2025-11-25, 2025-11-25";
  CHECK(rejected(f).reason == "unsupported_protocol_version");
  // A list joined the same way is still the list.
  f = good_post();
  f.accept = "application/json, text/event-stream";
  CHECK(accepted(f) == Identity{"local", ""});
}

TEST_CASE("request checks: check_caller is the bodiless head of check_request") {
  RequestFacts f = good_post();
  f.accept = "text/html";
  f.content_type = "text/plain";
  f.protocol_version = "1999-01-01";
  f.session_id = "x";
  // Who is calling is fine; what the request asks for is not, and only check_request says so.
  auto caller = check_caller(f, {});
  REQUIRE(std::holds_alternative<Identity>(caller));
  CHECK(std::get<Identity>(caller) == Identity{"local", ""});
  CHECK(rejected(f).reason == "not_acceptable");
  f.host = "evil.example";
  auto refused = check_caller(f, {});
  REQUIRE(std::holds_alternative<Rejection>(refused));
  CHECK(std::get<Rejection>(refused).reason == "host_not_allowed");
}

TEST_CASE("request checks: the stateful rejections") {
  Rejection missing = Rejection::missing_session();
  CHECK(missing.http_status == 400);
  CHECK(error_message(missing, kTransportError).find("Mcp-Session-Id") != std::string::npos);

  Rejection unknown = Rejection::unknown_session();
  CHECK(unknown.http_status == 404);
  CHECK(error_message(unknown, kSessionNotFound) == "Session not found");

  Rejection big = Rejection::payload_too_large(4194304);
  CHECK(big.http_status == 413);
  CHECK(error_message(big, kTransportError).find("4194304") != std::string::npos);
  Rejection big2 = Rejection::payload_too_large(100, 250);
  std::string m = error_message(big2, kTransportError);
  CHECK(m.find("100") != std::string::npos);
  CHECK(m.find("250") != std::string::npos);

  Rejection batch = Rejection::bad_batch();
  CHECK(batch.http_status == 400);
  CHECK(error_message(batch, kInvalidRequest).find("2025-03-26") != std::string::npos);

  Rejection early = Rejection::pre_initialize();
  CHECK(early.http_status == 400);
  error_message(early, kTransportError);  // never -32020..-32022
  CHECK(early.reason == "not_initialized");

  auto parsed = parse_body(R"({"jsonrpc":"1.0","id":12,"method":"x"})");
  REQUIRE(std::holds_alternative<ParseFailure>(parsed));
  Rejection body = Rejection::invalid_body(std::get<ParseFailure>(parsed));
  CHECK(body.http_status == 400);
  error_message(body, kInvalidRequest);
  CHECK(body.body.find(R"("id":12)") != std::string::npos);

  auto garbage = parse_body("{");
  REQUIRE(std::holds_alternative<ParseFailure>(garbage));
  Rejection parse = Rejection::invalid_body(std::get<ParseFailure>(garbage));
  error_message(parse, kParseError);
  CHECK(parse.body.find(R"("id":null)") != std::string::npos);
}
