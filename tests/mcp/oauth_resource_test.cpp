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
  s.issuers = {kIssuer};
  s.resource = kResource;
  s.scopes = {"mcp"};
  s.min_key_refresh = std::chrono::milliseconds(30'000);
  return s;
}

// The AS publishes its metadata (RFC 8414) and `jwks`; an OAuthResource with `s` starts
// on it.
std::unique_ptr<OAuthResource> start_on(FakeAs& as, ManualClock& clock, const std::string& jwks,
                                        OAuthSettings s = settings()) {
  as.put(kRfc8414Url, as_metadata());
  as.put(kJwksUrl, jwks);
  auto started = OAuthResource::start(std::move(s), as.fetch(), clock.clock());
  REQUIRE(started.ok());
  return std::move(started).value();
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
  auto started = start_on(as, clock, testkit::jwks_of({&old_key}));
  auto& oauth = *started;
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
  auto started = start_on(as, clock, testkit::jwks_of({&key}));
  auto& oauth = *started;
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
  s.issuers = {"as.example"};
  CHECK_FALSE(OAuthResource::start(s, as.fetch()).ok());
  s.issuers = {};
  CHECK_FALSE(OAuthResource::start(s, as.fetch()).ok());
  s.issuers = {kIssuer, "https://other.example", kIssuer};
  auto twice = OAuthResource::start(s, as.fetch());
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message.find("named twice") != std::string::npos);
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

TEST_CASE("oauth resource: a verified token is not verified again until it expires or the keys reload") {
  FakeAs as;
  ManualClock clock;
  TestKey key("ES256", "k1");
  auto started = start_on(as, clock, testkit::jwks_of({&key}));
  auto& oauth = *started;
  const std::string alice = key.sign(claims("alice"));
  REQUIRE(std::get<Identity>(verdict(oauth, alice)) == Identity{"alice", kIssuer});
  CHECK(oauth.signature_checks() == 1);

  // The front door and the handler both ask; the client sends it again and again.
  for (int i = 0; i < 5; ++i) {
    auto again = oauth.authenticate_cached(alice);
    REQUIRE(again.has_value());
    CHECK(std::get<Identity>(*again) == Identity{"alice", kIssuer});
  }
  CHECK(std::get<Identity>(verdict(oauth, alice)) == Identity{"alice", kIssuer});
  CHECK(oauth.signature_checks() == 1);
  // Another token is checked on its own, and a token that differs in one byte is no hit.
  CHECK(std::get<Identity>(verdict(oauth, key.sign(claims("bob")))) == Identity{"bob", kIssuer});
  CHECK(oauth.signature_checks() == 2);
  // Change a character inside the signature, where every bit belongs to a byte.
  std::string tampered = alice;
  char& inside = tampered[alice.rfind('.') + 10];
  inside = inside == 'A' ? 'B' : 'A';
  CHECK(std::get<Rejection>(verdict(oauth, tampered)).http_status == 401);
  CHECK(oauth.signature_checks() == 3);

  // The AS adds a key, and a token with its kid loads the keys again: a remembered token
  // is verified once more against the new set (it might have lost its key).
  TestKey added("ES256", "k2");
  as.put(kJwksUrl, testkit::jwks_of({&key, &added}));
  clock.seconds += 31;
  REQUIRE(std::holds_alternative<Identity>(verdict(oauth, added.sign(claims("carol")))));
  REQUIRE(oauth.key_fetches() == 2);
  auto checks = oauth.signature_checks();
  REQUIRE(std::holds_alternative<Identity>(verdict(oauth, alice)));
  CHECK(oauth.signature_checks() == checks + 1);
  REQUIRE(std::holds_alternative<Identity>(verdict(oauth, alice)));
  CHECK(oauth.signature_checks() == checks + 1);

  // Past exp + skew, a remembered token is refused like any other.
  clock.seconds = kStart + 3600 + 60;
  auto late = verdict(oauth, alice);
  REQUIRE(std::holds_alternative<Rejection>(late));
  CHECK(std::get<Rejection>(late).http_status == 401);
}

TEST_CASE("oauth resource: with verified_cache 0 every request's token is verified") {
  FakeAs as;
  ManualClock clock;
  TestKey key("RS256", "k1");
  auto s = settings();
  s.verified_cache = 0;
  auto started = start_on(as, clock, testkit::jwks_of({&key}), s);
  const std::string token = key.sign(claims());
  for (int i = 0; i < 3; ++i) REQUIRE(std::holds_alternative<Identity>(verdict(*started, token)));
  CHECK(started->signature_checks() == 3);
}

TEST_CASE("oauth resource: several issuers — iss picks the keys; the principal includes it; strangers cost no fetch") {
  FakeAs as;
  ManualClock clock;
  const std::string second = "https://login.example";
  const std::string second_jwks = "https://login.example/keys";
  TestKey first_key("ES256", "shared-kid");
  TestKey second_key("RS256", "shared-kid");  // the same kid at both: only iss tells them apart
  as.put(kRfc8414Url, as_metadata());
  as.put(kJwksUrl, testkit::jwks_of({&first_key}));
  as.put("https://login.example/.well-known/oauth-authorization-server",
         "{\"issuer\":\"" + second + "\",\"jwks_uri\":\"" + second_jwks + "\"}");
  as.put(second_jwks, testkit::jwks_of({&second_key}));
  auto s = settings();
  s.issuers = {kIssuer, second};
  auto started = OAuthResource::start(s, as.fetch(), clock.clock());
  REQUIRE(started.ok());
  auto& oauth = **started;

  auto claims_of = [](const std::string& iss, const std::string& sub) {
    return "{\"iss\":\"" + iss + "\",\"sub\":\"" + sub + "\",\"aud\":\"" + kResource +
           "\",\"exp\":" + std::to_string(kStart + 3600) + ",\"scope\":\"mcp\"}";
  };
  CHECK(std::get<Identity>(verdict(oauth, first_key.sign(claims_of(kIssuer, "alice")))) == Identity{"alice", kIssuer});
  CHECK(std::get<Identity>(verdict(oauth, second_key.sign(claims_of(second, "alice")))) == Identity{"alice", second});
  // A key of one AS never vouches for a token that names the other.
  CHECK(std::get<Rejection>(verdict(oauth, first_key.sign(claims_of(second, "alice")))).http_status == 401);
  CHECK(std::get<Rejection>(verdict(oauth, second_key.sign(claims_of(kIssuer, "alice")))).http_status == 401);

  // An issuer not configured: refused at once, nothing fetched.
  auto fetches = oauth.key_fetches();
  auto stranger = oauth.authenticate_cached(TestKey("ES256", "x").sign(claims_of("https://evil.example", "alice")));
  REQUIRE(stranger.has_value());
  CHECK(std::get<Rejection>(*stranger).http_status == 401);
  CHECK(oauth.key_fetches() == fetches);

  CHECK(oauth.metadata_json().find("\"authorization_servers\":[\"" + kIssuer + "\",\"" + second + "\"]") !=
        std::string::npos);
}

TEST_CASE("oauth resource: an issuer whose keys cannot be fetched does not hold up another's tokens") {
  FakeAs as;
  ManualClock clock;
  TestKey key("ES256", "k1");
  as.put(kRfc8414Url, as_metadata());
  as.put(kJwksUrl, testkit::jwks_of({&key}));
  const std::string down = "https://down.example";
  std::promise<void> release;
  auto released = release.get_future().share();
  auto inner = as.fetch();
  // Every fetch from the down AS hangs until the test ends it.
  OAuthResource::Fetch fetch = [inner, released, down](const std::string& url) -> Result<std::string> {
    if (url.starts_with(down)) {
      released.wait();
      return Error{ErrorCode::io_error, "GET " + url + ": timed out"};
    }
    return inner(url);
  };
  auto s = settings();
  s.issuers = {down, kIssuer};
  auto started = OAuthResource::start(s, fetch, clock.clock());
  REQUIRE(started.ok());
  struct Release {
    std::promise<void>& promise;
    ~Release() { promise.set_value(); }  // before `started` stops (and joins) its threads
  } guard{release};
  CHECK(std::get<Identity>(verdict(**started, key.sign(claims()))) == Identity{"alice", kIssuer});
}

TEST_CASE("oauth resource: a JWKS with one broken key still serves its good one") {
  FakeAs as;
  ManualClock clock;
  TestKey key("EdDSA", "good");
  std::string jwks = testkit::jwks_of({&key});
  jwks.insert(jwks.find('[') + 1, R"({"kty":"RSA","kid":"broken","n":"*","e":"AQAB"},)");
  auto started = start_on(as, clock, jwks);
  CHECK(std::get<Identity>(verdict(*started, key.sign(claims()))) == Identity{"alice", kIssuer});
}
