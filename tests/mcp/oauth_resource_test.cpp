// OAuthResource with an authorization server in memory (a map of URL → document) and a
// clock the test moves: discovery, key rotation, the bounded refresh rate, and the HTTP
// answers (401 / 403 / 503 and their WWW-Authenticate).
#include "dorm/mcp/oauth_resource.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>

#include "jwt_signer.hpp"

using namespace dorm;
using namespace dorm::mcp;
using testkit::TestKey;

namespace {

const std::string kIssuer = "https://as.example/tenant";
const std::string kResource = "https://mcp.example/mcp";
constexpr std::int64_t kStart = 1'800'000'000;

// The AS: documents by URL, and how often each was asked for.
struct FakeAs {
  std::mutex mutex;
  std::map<std::string, std::string> documents;
  std::map<std::string, int> asked;

  void put(const std::string& url, std::string body) {
    std::lock_guard lock(mutex);
    documents[url] = std::move(body);
  }
  int count(const std::string& url) {
    std::lock_guard lock(mutex);
    return asked[url];
  }
  OAuthResource::Fetch fetch() {
    return [this](const std::string& url) -> Result<std::string> {
      std::lock_guard lock(mutex);
      ++asked[url];
      auto it = documents.find(url);
      if (it == documents.end()) return Error{ErrorCode::io_error, "GET " + url + ": status 404"};
      return it->second;
    };
  }
};

struct ManualClock {
  std::atomic<std::int64_t> seconds{kStart};
  OAuthResource::Clock clock() {
    return [this] { return std::chrono::system_clock::time_point(std::chrono::seconds(seconds.load())); };
  }
};

const std::string kOidcUrl = kIssuer + "/.well-known/openid-configuration";
const std::string kRfc8414Url = "https://as.example/.well-known/oauth-authorization-server/tenant";
const std::string kJwksUrl = "https://as.example/tenant/jwks";

std::string as_metadata(const std::string& issuer = kIssuer) {
  return "{\"issuer\":\"" + issuer + "\",\"jwks_uri\":\"" + kJwksUrl + "\"}";
}

std::string claims(const std::string& sub = "alice", const std::string& scope = "mcp") {
  return "{\"iss\":\"" + kIssuer + "\",\"sub\":\"" + sub + "\",\"aud\":\"" + kResource +
         "\",\"exp\":" + std::to_string(kStart + 3600) + ",\"scope\":\"" + scope + "\"}";
}

OAuthSettings settings() {
  OAuthSettings s;
  s.issuer = kIssuer;
  s.resource = kResource;
  s.scopes = {"mcp"};
  s.min_key_refresh = std::chrono::milliseconds(30'000);
  return s;
}

// authenticate's answer, waited for with a bound (it may come from the fetch thread).
AuthVerdict verdict(const OAuthResource& oauth, std::optional<std::string_view> token) {
  auto promise = std::make_shared<std::promise<AuthVerdict>>();
  auto future = promise->get_future();
  oauth.authenticate(token, [promise](AuthVerdict v) { promise->set_value(std::move(v)); });
  REQUIRE(future.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  return future.get();
}

std::string header(const Rejection& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

}  // namespace

TEST_CASE("oauth resource: keys found through discovery; the principal is sub + iss") {
  FakeAs as;
  ManualClock clock;
  TestKey key("ES256", "k1");
  as.put(kOidcUrl, as_metadata());  // RFC 8414's URL answers 404: OIDC discovery is used
  as.put(kJwksUrl, testkit::jwks_of({&key}));
  auto oauth = OAuthResource::start(settings(), as.fetch(), clock.clock());
  REQUIRE(oauth.ok());

  auto v = verdict(**oauth, key.sign(claims()));
  REQUIRE(std::holds_alternative<Identity>(v));
  CHECK(std::get<Identity>(v) == Identity{"alice", kIssuer});
  CHECK(as.count(kRfc8414Url) == 1);
  CHECK(as.count(kJwksUrl) == 1);

  // Cached now: decided on the calling thread, no fetch.
  auto cached = (*oauth)->authenticate_cached(key.sign(claims("bob")));
  REQUIRE(cached.has_value());
  CHECK(std::get<Identity>(*cached) == Identity{"bob", kIssuer});
  CHECK((*oauth)->key_fetches() == 1);
}

TEST_CASE("oauth resource: metadata naming another issuer is not used (503, no key trusted)") {
  FakeAs as;
  ManualClock clock;
  TestKey key("RS256", "k1");
  as.put(kRfc8414Url, as_metadata("https://evil.example"));
  as.put(kOidcUrl, as_metadata("https://evil.example"));
  as.put(kJwksUrl, testkit::jwks_of({&key}));
  auto oauth = OAuthResource::start(settings(), as.fetch(), clock.clock());
  REQUIRE(oauth.ok());
  auto v = verdict(**oauth, key.sign(claims()));
  REQUIRE(std::holds_alternative<Rejection>(v));
  CHECK(std::get<Rejection>(v).http_status == 503);
  CHECK(as.count(kJwksUrl) == 0);
}

TEST_CASE("oauth resource: a rotated key is fetched on its first use; made-up kids fetch at most once per interval") {
  FakeAs as;
  ManualClock clock;
  TestKey old_key("RS256", "old");
  TestKey new_key("RS256", "new");
  as.put(kRfc8414Url, as_metadata());
  as.put(kJwksUrl, testkit::jwks_of({&old_key}));
  auto started = OAuthResource::start(settings(), as.fetch(), clock.clock());
  REQUIRE(started.ok());
  auto& oauth = **started;
  REQUIRE(std::holds_alternative<Identity>(verdict(oauth, old_key.sign(claims()))));
  REQUIRE(oauth.key_fetches() == 1);

  // The AS rotates; the interval since the last fetch has passed.
  as.put(kJwksUrl, testkit::jwks_of({&new_key}));
  clock.seconds += 31;
  auto rotated = verdict(oauth, new_key.sign(claims()));
  REQUIRE(std::holds_alternative<Identity>(rotated));
  CHECK(oauth.key_fetches() == 2);
  // The old key is gone from the AS, so from here too.
  clock.seconds += 1;
  CHECK(std::holds_alternative<Rejection>(verdict(oauth, old_key.sign(claims()))));

  // Within the interval, an unknown kid is refused at once, without a fetch.
  TestKey forger("RS256", "made-up");
  std::size_t before = oauth.key_fetches();
  auto refused = oauth.authenticate_cached(forger.sign(claims()));
  REQUIRE(refused.has_value());
  REQUIRE(std::holds_alternative<Rejection>(*refused));
  CHECK(std::get<Rejection>(*refused).http_status == 401);
  CHECK(oauth.key_fetches() == before);
  for (int i = 0; i < 5; ++i) {
    auto again = verdict(oauth, TestKey("ES256", "made-up-" + std::to_string(i)).sign(claims()));
    CHECK(std::get<Rejection>(again).http_status == 401);
  }
  CHECK(oauth.key_fetches() == before);

  // After the interval, one more fetch (which does not know the kid either: 401).
  clock.seconds += 30;
  auto late = verdict(oauth, forger.sign(claims()));
  CHECK(std::get<Rejection>(late).http_status == 401);
  CHECK(oauth.key_fetches() == before + 1);
}

TEST_CASE("oauth resource: the answers' status and WWW-Authenticate") {
  FakeAs as;
  ManualClock clock;
  TestKey key("EdDSA", "k1");
  as.put(kRfc8414Url, as_metadata());
  as.put(kJwksUrl, testkit::jwks_of({&key}));
  auto started = OAuthResource::start(settings(), as.fetch(), clock.clock());
  REQUIRE(started.ok());
  auto& oauth = **started;
  const std::string metadata = "https://mcp.example/.well-known/oauth-protected-resource/mcp";
  CHECK(oauth.metadata_url() == metadata);

  auto missing = std::get<Rejection>(verdict(oauth, std::nullopt));
  CHECK(missing.http_status == 401);
  CHECK(header(missing, "WWW-Authenticate") == "Bearer resource_metadata=\"" + metadata + "\"");

  auto expired_claims = claims();
  expired_claims.replace(expired_claims.find(std::to_string(kStart + 3600)), 10, std::to_string(kStart - 3600));
  auto expired = std::get<Rejection>(verdict(oauth, key.sign(expired_claims)));
  CHECK(expired.http_status == 401);
  CHECK(header(expired, "WWW-Authenticate").starts_with("Bearer resource_metadata=\"" + metadata +
                                                        "\", error=\"invalid_token\", error_description=\""));

  auto unscoped = std::get<Rejection>(verdict(oauth, key.sign(claims("alice", "openid"))));
  CHECK(unscoped.http_status == 403);
  CHECK(header(unscoped, "WWW-Authenticate") ==
        "Bearer error=\"insufficient_scope\", scope=\"mcp\", resource_metadata=\"" + metadata + "\"");

  auto malformed = std::get<Rejection>(verdict(oauth, std::string_view("")));
  CHECK(malformed.http_status == 401);
  CHECK(header(malformed, "WWW-Authenticate").find("invalid_token") != std::string::npos);
}

TEST_CASE("oauth resource: the metadata document and where it is published") {
  FakeAs as;
  ManualClock clock;
  auto s = settings();
  s.resource.clear();
  s.scopes = {"mcp", "tools"};
  auto started = OAuthResource::start(s, as.fetch(), clock.clock());
  REQUIRE(started.ok());
  auto& oauth = **started;
  // Before the resource is known every token is answered 503.
  CHECK(std::get<Rejection>(*oauth.authenticate_cached(std::nullopt)).http_status == 503);
  CHECK_FALSE(oauth.set_resource("not a url").ok());
  REQUIRE(oauth.set_resource("http://127.0.0.1:9000/mcp").ok());
  CHECK(oauth.metadata_url() == "http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp");
  CHECK(oauth.is_metadata_path("/.well-known/oauth-protected-resource"));
  CHECK(oauth.is_metadata_path("/.well-known/oauth-protected-resource/mcp"));
  CHECK_FALSE(oauth.is_metadata_path("/.well-known/oauth-protected-resource/other"));
  CHECK(oauth.metadata_json() ==
        "{\"resource\":\"http://127.0.0.1:9000/mcp\",\"authorization_servers\":[\"" + kIssuer +
            "\"],\"scopes_supported\":[\"mcp\",\"tools\"],\"bearer_methods_supported\":[\"header\"],"
            "\"resource_name\":\"dorm\"}");
  CHECK(protected_resource_metadata_url("https://h.example") ==
        "https://h.example/.well-known/oauth-protected-resource");
}

TEST_CASE("oauth resource: bad settings are refused at start") {
  FakeAs as;
  auto s = settings();
  s.issuer = "as.example";
  CHECK_FALSE(OAuthResource::start(s, as.fetch()).ok());
  s = settings();
  s.resource = "https://mcp.example/mcp#frag";
  CHECK_FALSE(OAuthResource::start(s, as.fetch()).ok());
  s = settings();
  s.scopes = {"two words"};
  CHECK_FALSE(OAuthResource::start(s, as.fetch()).ok());
}

TEST_CASE("oauth resource: parked requests are answered 503 when it stops") {
  FakeAs as;  // answers nothing: every fetch fails
  ManualClock clock;
  TestKey key("ES256", "k1");
  auto started = OAuthResource::start(settings(), as.fetch(), clock.clock());
  REQUIRE(started.ok());
  auto v = verdict(**started, key.sign(claims()));
  CHECK(std::get<Rejection>(v).http_status == 503);
  (*started)->stop();
  auto after = verdict(**started, key.sign(claims()));
  CHECK(std::get<Rejection>(after).http_status == 503);
}
