// RFC 7662 introspection: parse_introspection and check_introspected row by row (the table
// in token_introspection.hpp), and TokenIntrospector with the authorization server's
// endpoint in memory — what it sends, what it remembers and for how long, and that
// requests for one token share one exchange. OAuthResource's use of it: opaque tokens.
#include "dorm/mcp/token_introspection.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>

#include "dorm/mcp/oauth_resource.hpp"
#include "jwt_signer.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

constexpr std::int64_t kStart = 1'800'000'000;
const auto kNowPoint = std::chrono::system_clock::time_point(std::chrono::seconds(kStart));
const std::string kIssuer = "https://as.example";
const std::string kResource = "https://mcp.example/mcp";
const std::string kEndpoint = "https://as.example/introspect";

IntrospectionRules rules() { return {{kIssuer, "https://second.example"}, kResource, {"mcp"}, std::chrono::seconds(60)}; }

IntrospectedToken parsed(std::string_view json) {
  auto p = parse_introspection(json);
  REQUIRE(p.ok());
  return std::move(p).value();
}

TokenRefusal::Kind refusal(std::string_view json) {
  auto v = check_introspected(parsed(json), rules(), kNowPoint);
  REQUIRE(std::holds_alternative<TokenRefusal>(v));
  return std::get<TokenRefusal>(v).kind;
}

// The AS's introspection endpoint: token → answer, what was sent, and a gate that holds
// every exchange until the test opens it.
struct FakeEndpoint {
  std::mutex mutex;
  std::map<std::string, std::string> answers;  // by token
  std::vector<std::pair<std::string, std::string>> sent;  // (form, authorization)
  std::shared_future<void> gate;

  TokenIntrospector::Post post() {
    return [this](const std::string& url, const std::string& form, const std::string& authorization)
               -> Result<std::string> {
      std::shared_future<void> wait_for;
      {
        std::lock_guard lock(mutex);
        sent.emplace_back(form, authorization);
        wait_for = gate;
      }
      if (wait_for.valid()) wait_for.wait();
      if (url != kEndpoint) return Error{ErrorCode::io_error, "POST " + url + ": status 404"};
      std::lock_guard lock(mutex);
      for (const auto& [token, answer] : answers) {
        if (form == "token=" + token + "&token_type_hint=access_token") return answer;
      }
      return std::string(R"({"active":false})");
    };
  }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return sent.size();
  }
};

struct ManualClock {
  std::atomic<std::int64_t> seconds{kStart};
  TokenIntrospector::Clock clock() {
    return [this] { return std::chrono::system_clock::time_point(std::chrono::seconds(seconds.load())); };
  }
};

IntrospectionSettings settings() {
  IntrospectionSettings s;
  s.url = kEndpoint;
  s.client_id = "dorm rs";  // a space: form-encoded inside the Basic credentials
  s.client_secret = "s3cr:t";
  s.cache_ttl = std::chrono::seconds(60);
  s.threads = 2;
  return s;
}

TokenIntrospector::Answer answer_of(TokenIntrospector& introspector, const std::string& token) {
  auto promise = std::make_shared<std::promise<TokenIntrospector::Answer>>();
  auto future = promise->get_future();
  introspector.introspect(token, [promise](TokenIntrospector::Answer a) { promise->set_value(std::move(a)); });
  REQUIRE(future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  return future.get();
}

}  // namespace

TEST_CASE("introspection answer: parsed, and refused only when it is not one") {
  auto full = parsed(R"({"active":true,"iss":"https://as.example","sub":"alice","client_id":"c",)"
                     R"("aud":["x","y"],"scope":"mcp  other","exp":1800000300,"nbf":1799999000,"token_type":"Bearer"})");
  CHECK(full.active);
  CHECK(full.issuer == kIssuer);
  CHECK(full.subject == "alice");
  CHECK(full.client_id == "c");
  CHECK(full.audience == std::vector<std::string>{"x", "y"});
  CHECK(full.scopes == std::vector<std::string>{"mcp", "other"});
  CHECK(full.expires_at == 1'800'000'300);
  CHECK(full.not_before == 1'799'999'000);
  CHECK(parsed(R"({"active":true,"aud":"one"})").audience == std::vector<std::string>{"one"});
  CHECK_FALSE(parsed(R"({"active":false})").active);

  for (std::string_view bad : {"", "[]", "{}", R"({"active":"true"})", R"({"active":1})", "{\"active\":true"}) {
    CAPTURE(bad);
    auto p = parse_introspection(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == ErrorCode::invalid_argument);
  }
}

TEST_CASE("introspected token: every row of the table") {
  using K = TokenRefusal::Kind;
  auto ok = check_introspected(parsed(R"({"active":true,"sub":"alice","iss":"https://second.example",)"
                                      R"("aud":"https://mcp.example/mcp","scope":"mcp","exp":1800000100})"),
                               rules(), kNowPoint);
  REQUIRE(std::holds_alternative<AccessClaims>(ok));
  CHECK(std::get<AccessClaims>(ok).subject == "alice");
  CHECK(std::get<AccessClaims>(ok).issuer == "https://second.example");

  // Facts the AS left out are not invented: no iss → the first issuer; no aud, exp → fine;
  // no sub → the client acting for itself.
  auto bare = check_introspected(parsed(R"({"active":true,"client_id":"svc","scope":"mcp"})"), rules(), kNowPoint);
  REQUIRE(std::holds_alternative<AccessClaims>(bare));
  CHECK(std::get<AccessClaims>(bare).subject == "svc");
  CHECK(std::get<AccessClaims>(bare).issuer == kIssuer);

  CHECK(refusal(R"({"active":false,"sub":"alice","scope":"mcp"})") == K::inactive);
  CHECK(refusal(R"({"active":true,"sub":"alice","scope":"mcp","iss":"https://evil.example"})") == K::wrong_issuer);
  CHECK(refusal(R"({"active":true,"sub":"alice","scope":"mcp","aud":["https://other.example/mcp"]})") ==
        K::wrong_audience);
  CHECK(refusal(R"({"active":true,"sub":"alice","scope":"mcp","exp":1799999940})") == K::expired);
  CHECK(refusal(R"({"active":true,"sub":"alice","scope":"mcp","nbf":1800000061})") == K::not_yet_valid);
  CHECK(refusal(R"({"active":true,"scope":"mcp"})") == K::missing_subject);
  CHECK(refusal(R"({"active":true,"sub":"alice","scope":"other"})") == K::insufficient_scope);
  // Within the skew, both ways.
  CHECK(std::holds_alternative<AccessClaims>(check_introspected(
      parsed(R"({"active":true,"sub":"a","scope":"mcp","exp":1799999941,"nbf":1800000060})"), rules(), kNowPoint)));
}

TEST_CASE("token introspector: what it sends, what it remembers, and for how long") {
  FakeEndpoint as;
  ManualClock clock;
  as.answers["opaque-1"] = R"({"active":true,"sub":"alice","scope":"mcp","exp":1800000030})";
  as.answers["opaque/2+"] = R"({"active":true,"sub":"bob","scope":"mcp"})";
  auto started = TokenIntrospector::start(settings(), as.post(), clock.clock());
  REQUIRE(started.ok());
  auto& introspector = **started;

  CHECK_FALSE(introspector.cached("opaque-1").has_value());
  auto first = answer_of(introspector, "opaque-1");
  REQUIRE(first.ok());
  CHECK(first->subject == "alice");
  REQUIRE(as.count() == 1);
  // HTTP Basic of form-encoded "dorm rs" and "s3cr:t" (RFC 6749 §2.3.1).
  CHECK(as.sent[0].second == "Basic ZG9ybSUyMHJzOnMzY3IlM0F0");
  CHECK(as.sent[0].first == "token=opaque-1&token_type_hint=access_token");
  // The token is form-encoded in the body.
  REQUIRE(answer_of(introspector, "opaque/2+").ok());
  CHECK(as.sent[1].first == "token=opaque%2F2%2B&token_type_hint=access_token");

  // Remembered: no second exchange...
  CHECK(introspector.cached("opaque-1")->subject == "alice");
  CHECK(answer_of(introspector, "opaque-1")->subject == "alice");
  CHECK(introspector.requests() == 2);
  // ...but an active token no longer than its exp (30 s here), another for the TTL (60 s).
  clock.seconds += 30;
  CHECK_FALSE(introspector.cached("opaque-1").has_value());
  CHECK(introspector.cached("opaque/2+").has_value());
  clock.seconds += 30;
  CHECK_FALSE(introspector.cached("opaque/2+").has_value());
  // An inactive answer is remembered too (a flood of one made-up token costs one exchange).
  REQUIRE_FALSE(answer_of(introspector, "made-up")->active);
  REQUIRE_FALSE(answer_of(introspector, "made-up")->active);
  CHECK(introspector.requests() == 3);
}

TEST_CASE("token introspector: concurrent requests for one token share one exchange; failures are not remembered") {
  FakeEndpoint as;
  ManualClock clock;
  std::promise<void> open;
  as.gate = open.get_future().share();
  as.answers["tok"] = R"({"active":true,"sub":"alice","scope":"mcp"})";
  auto s = settings();
  s.max_waiting = 8;
  auto started = TokenIntrospector::start(s, as.post(), clock.clock());
  REQUIRE(started.ok());
  auto& introspector = **started;
  std::vector<std::future<TokenIntrospector::Answer>> answers;
  for (int i = 0; i < 8; ++i) {
    auto promise = std::make_shared<std::promise<TokenIntrospector::Answer>>();
    answers.push_back(promise->get_future());
    introspector.introspect("tok", [promise](TokenIntrospector::Answer a) { promise->set_value(std::move(a)); });
  }
  // The ninth waiter is one too many: answered at once, with an error.
  auto over = std::make_shared<std::promise<TokenIntrospector::Answer>>();
  auto over_future = over->get_future();
  introspector.introspect("tok", [over](TokenIntrospector::Answer a) { over->set_value(std::move(a)); });
  REQUIRE(over_future.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  CHECK_FALSE(over_future.get().ok());
  open.set_value();
  for (auto& f : answers) {
    REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    CHECK(f.get()->subject == "alice");
  }
  CHECK(introspector.requests() == 1);

  // An endpoint that fails: an error, and the next request asks again.
  auto broken_settings = settings();
  broken_settings.url = "https://as.example/elsewhere";
  auto broken = TokenIntrospector::start(broken_settings, as.post(), clock.clock());
  REQUIRE(broken.ok());
  CHECK_FALSE(answer_of(**broken, "tok").ok());
  CHECK_FALSE(answer_of(**broken, "tok").ok());
  CHECK((*broken)->requests() == 2);
}

TEST_CASE("token introspector: bad settings are refused at start") {
  FakeEndpoint as;
  auto s = settings();
  s.url = "as.example/introspect";
  CHECK_FALSE(TokenIntrospector::start(s, as.post()).ok());
  s = settings();
  s.url = "http://as.example/introspect";  // plain http to a remote host
  CHECK_FALSE(TokenIntrospector::start(s, as.post()).ok());
  s.url = "http://127.0.0.1:9/introspect";
  CHECK(TokenIntrospector::start(s, as.post()).ok());
  s = settings();
  s.client_secret.clear();
  CHECK_FALSE(TokenIntrospector::start(s, as.post()).ok());
  s = settings();
  s.threads = 0;
  CHECK_FALSE(TokenIntrospector::start(s, as.post()).ok());
}

TEST_CASE("oauth resource: opaque tokens are introspected; JWTs are still verified locally") {
  FakeEndpoint endpoint;
  ManualClock clock;
  endpoint.answers["opaque-alice"] = R"({"active":true,"sub":"alice","scope":"mcp","aud":"https://mcp.example/mcp"})";
  endpoint.answers["opaque-unscoped"] = R"({"active":true,"sub":"alice","scope":"read"})";
  testkit::TestKey key("ES256", "k1");
  std::map<std::string, std::string> documents{
      {"https://as.example/.well-known/oauth-authorization-server",
       R"({"issuer":"https://as.example","jwks_uri":"https://as.example/jwks"})"},
      {"https://as.example/jwks", testkit::jwks_of({&key})}};
  OAuthSettings s;
  s.issuers = {kIssuer};
  s.resource = kResource;
  s.scopes = {"mcp"};
  s.introspection = settings();
  auto started = OAuthResource::start(
      s,
      [&documents](const std::string& url) -> Result<std::string> {
        auto it = documents.find(url);
        if (it == documents.end()) return Error{ErrorCode::io_error, url + ": 404"};
        return it->second;
      },
      [&clock] { return std::chrono::system_clock::time_point(std::chrono::seconds(clock.seconds.load())); },
      endpoint.post());
  REQUIRE(started.ok());
  auto& oauth = **started;
  auto verdict = [&oauth](const std::string& token) {
    auto promise = std::make_shared<std::promise<AuthVerdict>>();
    auto future = promise->get_future();
    oauth.authenticate(token, [promise](AuthVerdict v) { promise->set_value(std::move(v)); });
    REQUIRE(future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    return future.get();
  };

  // The front door cannot decide an opaque token it has not seen: it lets the request on.
  CHECK_FALSE(oauth.authenticate_cached(std::string_view("opaque-alice")).has_value());
  CHECK(std::get<Identity>(verdict("opaque-alice")) == Identity{"alice", kIssuer});
  CHECK(std::get<Identity>(*oauth.authenticate_cached(std::string_view("opaque-alice"))) == Identity{"alice", kIssuer});
  CHECK(oauth.introspections() == 1);
  CHECK(std::get<Rejection>(verdict("opaque-unscoped")).http_status == 403);
  auto inactive = std::get<Rejection>(verdict("revoked-or-made-up"));
  CHECK(inactive.http_status == 401);
  CHECK(inactive.body.find("not active") != std::string::npos);

  // A JWT never goes to the introspection endpoint.
  std::string claims = R"({"iss":"https://as.example","sub":"bob","aud":"https://mcp.example/mcp","exp":)" +
                       std::to_string(kStart + 300) + R"(,"scope":"mcp"})";
  CHECK(std::get<Identity>(verdict(key.sign(claims))) == Identity{"bob", kIssuer});
  CHECK(oauth.introspections() == 3);
}
