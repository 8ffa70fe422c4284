#include "dorm/mcp/oauth_resource.hpp"

#include <boost/url/parse.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/runtime/log.hpp"
#include "json_text.hpp"
#include "token_memo.hpp"

namespace dorm::mcp {
namespace {

using SysClock = std::chrono::system_clock;

Rejection rejection(int status, std::string message, std::string_view reason) {
  Rejection r;
  r.http_status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = error_response(std::nullopt, kTransportError, message);
  r.reason = reason;
  return r;
}

// An auth-param value (RFC 9110 §5.6.4). Ours hold no quote or backslash; a configured
// scope or URL with one loses it rather than breaking the header.
std::string quoted(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (c != '"' && c != '\\' && u >= 0x20 && u < 0x7f) out += c;
  }
  return out + "\"";
}

Rejection invalid_bearer(std::string_view metadata_url, std::optional<std::string_view> description) {
  Rejection r = rejection(401,
                          description ? "Unauthorized: " + std::string(*description)
                                      : std::string("Unauthorized: send Authorization: Bearer <token>"),
                          description ? "invalid_token" : "missing_token");
  std::string challenge = "Bearer resource_metadata=" + quoted(metadata_url);
  // RFC 6750 §3.1: no error code when the request had no credentials at all.
  if (description) challenge += ", error=\"invalid_token\", error_description=" + quoted(*description);
  r.headers.emplace_back("WWW-Authenticate", std::move(challenge));
  return r;
}

Rejection insufficient_scope(std::string_view metadata_url, std::string_view scopes) {
  Rejection r = rejection(403, "Forbidden: the token lacks a required scope (" + std::string(scopes) + ")",
                          "insufficient_scope");
  r.headers.emplace_back("WWW-Authenticate", "Bearer error=\"insufficient_scope\", scope=" + quoted(scopes) +
                                                 ", resource_metadata=" + quoted(metadata_url));
  return r;
}

Rejection unavailable(std::string_view why) {
  Rejection r = rejection(503, "Service Unavailable: " + std::string(why), "auth_unavailable");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

std::string joined(const std::vector<std::string>& scopes) {
  std::string out;
  for (const auto& s : scopes) out += (out.empty() ? "" : " ") + s;
  return out;
}

Result<void> check_url(std::string_view what, std::string_view url) {
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed || (parsed->scheme() != "https" && parsed->scheme() != "http") || parsed->host().empty() ||
      parsed->has_fragment()) {
    return Error{ErrorCode::invalid_argument,
                 std::string(what) + " '" + std::string(url) + "' must be an absolute http(s) URL without a fragment"};
  }
  return {};
}

// Where the AS publishes its metadata, in the order tried: RFC 8414 §3.1 (the well-known
// segment goes between the host and the issuer's path), then OpenID Connect Discovery 1.0
// §4 (appended to the issuer).
std::vector<std::string> metadata_urls(const std::string& issuer) {
  auto parsed = boost::urls::parse_absolute_uri(issuer);
  if (!parsed) return {};
  std::string origin = std::string(parsed->scheme()) + "://" + std::string(parsed->encoded_authority());
  std::string path = std::string(parsed->encoded_path());
  if (path == "/") path.clear();
  std::string trimmed = issuer;
  if (!trimmed.empty() && trimmed.back() == '/') trimmed.pop_back();
  return {origin + "/.well-known/oauth-authorization-server" + path,
          trimmed + "/.well-known/openid-configuration"};
}

}  // namespace

std::string protected_resource_metadata_url(std::string_view resource) {
  auto parsed = boost::urls::parse_absolute_uri(resource);
  if (!parsed || (parsed->scheme() != "https" && parsed->scheme() != "http")) return "";
  std::string path = std::string(parsed->encoded_path());
  if (path == "/") path.clear();
  return std::string(parsed->scheme()) + "://" + std::string(parsed->encoded_authority()) +
         std::string(kProtectedResourceMetadataPath) + path;
}

namespace {

// A token whose signature verified, as remembered: it holds while the keys that verified
// it are still its issuer's current ones (a reload may have dropped the key).
struct Verified {
  std::size_t issuer = 0;          // index into the issuers
  std::uint64_t keys_version = 0;  // IssuerKeys::version when it verified
  Identity who;
};

// One authorization server: where its keys are, the keys once read, and the thread that
// fetches them. A request parked on it is decided again (by State::decide, final) after
// each refresh.
struct IssuerKeys {
  using Fetch = OAuthResource::Fetch;
  using Decide = std::function<AuthVerdict(const std::string& token)>;

  IssuerKeys(std::string issuer, const OAuthSettings& settings, Fetch fetch, OAuthResource::Clock clock,
             Decide decide)
      : issuer(std::move(issuer)),
        settings(settings),
        fetch(std::move(fetch)),
        clock(std::move(clock)),
        decide(std::move(decide)) {}

  const std::string issuer;
  const OAuthSettings& settings;  // the State's; only the fields fixed at start are read
  const Fetch fetch;
  const OAuthResource::Clock clock;
  const Decide decide;

  mutable std::mutex mutex;  // guards everything below
  mutable std::condition_variable wake;
  std::shared_ptr<const KeySet> keys;  // null until a JWKS was read
  std::uint64_t version = 0;           // incremented with each load of `keys`
  SysClock::time_point keys_loaded{};
  SysClock::time_point last_fetch{};
  bool fetched_once = false;
  bool fetching = false;
  bool refresh_wanted = true;  // the first load
  bool stopping = false;
  std::string jwks_uri;  // from the AS metadata; cleared when the JWKS cannot be read
  std::vector<std::pair<std::string, AuthDone>> parked;
  std::size_t fetches = 0;
  std::thread thread;

  // What the verifier needs from the cache, read under the lock at once.
  struct Snapshot {
    std::shared_ptr<const KeySet> keys;
    std::uint64_t version = 0;
    bool stale = false;        // older than max_key_age: refresh in the background
    bool can_refresh = false;  // a fetch under way, or one allowed now
  };

  Snapshot snapshot(SysClock::time_point now) const {
    std::lock_guard lock(mutex);
    return {keys, version, keys && now - keys_loaded >= settings.max_key_age,
            !stopping && (fetching || may_fetch_locked(now))};
  }

  // A fetch may start now: the first one, or min_key_refresh after the last.
  bool may_fetch_locked(SysClock::time_point now) const {
    return !fetched_once || now - last_fetch >= settings.min_key_refresh;
  }

  void start() {
    thread = std::thread([this] { run(); });
  }

  void request_refresh() {
    {
      std::lock_guard lock(mutex);
      refresh_wanted = true;
    }
    wake.notify_one();
  }

  // Parks a request until the next refresh; false when it cannot wait (stopping, or
  // `max_parked` requests wait already).
  bool park(std::string token, AuthDone& done) {
    {
      std::lock_guard lock(mutex);
      if (stopping || parked.size() >= settings.max_parked) return false;
      parked.emplace_back(std::move(token), std::move(done));
      refresh_wanted = true;
    }
    wake.notify_one();
    return true;
  }

  // Ends the thread; the requests still parked are returned for the caller to answer.
  std::vector<std::pair<std::string, AuthDone>> stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (thread.joinable()) thread.join();
    std::lock_guard lock(mutex);
    return std::exchange(parked, {});
  }

  // The AS metadata's jwks_uri, checking that it names this issuer.
  Result<std::string> discover() {
    std::string errors;
    for (const auto& url : metadata_urls(issuer)) {
      auto text = fetch(url);
      if (!text) {
        errors += (errors.empty() ? "" : "; ") + text.error().message;
        continue;
      }
      rapidjson::Document doc;
      if (detail::parse_json(*text, doc) || !doc.IsObject()) {
        errors += (errors.empty() ? "" : "; ") + url + ": not a JSON object";
        continue;
      }
      auto named = doc.FindMember("issuer");
      if (named == doc.MemberEnd() || !named->value.IsString() || named->value.GetString() != issuer) {
        // RFC 8414 §3.3: metadata naming another issuer must not be used (a mix-up).
        errors += (errors.empty() ? "" : "; ") + url + ": its \"issuer\" is not " + issuer;
        continue;
      }
      auto jwks = doc.FindMember("jwks_uri");
      if (jwks == doc.MemberEnd() || !jwks->value.IsString()) {
        errors += (errors.empty() ? "" : "; ") + url + ": no \"jwks_uri\"";
        continue;
      }
      return std::string(jwks->value.GetString());
    }
    return Error{ErrorCode::io_error, "no usable authorization server metadata: " + errors};
  }

  // One refresh of the keys, on the fetch thread, without the lock held while fetching.
  void refresh() {
    std::string uri;
    {
      std::lock_guard lock(mutex);
      fetching = true;
      ++fetches;
      fetched_once = true;
      last_fetch = clock();
      uri = jwks_uri;
    }
    Result<std::shared_ptr<const KeySet>> loaded = [&]() -> Result<std::shared_ptr<const KeySet>> {
      if (uri.empty()) {
        auto found = discover();
        if (!found) return found.error();
        uri = std::move(*found);
      }
      auto text = fetch(uri);
      if (!text) return text.error();
      auto set = KeySet::parse(*text);
      if (!set) return set.error();
      return std::make_shared<const KeySet>(std::move(*set));
    }();
    std::lock_guard lock(mutex);
    fetching = false;
    if (!loaded) {
      jwks_uri.clear();  // discover again next time: the AS may have moved it
      log::warn("oauth_keys_unavailable", {{"issuer", issuer}, {"error", loaded.error().message}});
      return;
    }
    jwks_uri = uri;
    keys = std::move(*loaded);
    ++version;
    keys_loaded = clock();
    for (const auto& why : keys->skipped()) {
      log::warn("oauth_key_skipped", {{"issuer", issuer}, {"jwks_uri", uri}, {"error", why}});
    }
    log::info("oauth_keys_loaded",
              {{"issuer", issuer}, {"jwks_uri", uri}, {"keys", static_cast<std::int64_t>(keys->size())}});
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [this] { return stopping || refresh_wanted || !parked.empty(); });
      if (stopping) return;
      bool fetch_now = refresh_wanted && may_fetch_locked(clock());
      refresh_wanted = false;
      lock.unlock();
      if (fetch_now) refresh();
      lock.lock();
      // Each request parked so far is decided with the keys as they are now.
      auto waiting = std::exchange(parked, {});
      lock.unlock();
      for (auto& [token, done] : waiting) done(decide(token));
      lock.lock();
    }
  }
};

}  // namespace

struct OAuthResource::State {
  explicit State(OAuthSettings s) : settings(std::move(s)), verified(settings.verified_cache) {
    if (!settings.resource.empty()) audience = make_audience(settings.resource);
  }

  // Where this server is: its resource URI and the metadata URL made from it. Replaced
  // whole by set_resource, so a request reads both with one pointer copy.
  struct Audience {
    std::string resource;
    std::string metadata_url;
  };
  static std::shared_ptr<const Audience> make_audience(const std::string& resource) {
    return std::make_shared<const Audience>(Audience{resource, protected_resource_metadata_url(resource)});
  }

  // Every field but `resource` is fixed once started and read without the lock; the
  // resource is `audience`'s.
  OAuthSettings settings;
  mutable std::mutex mutex;  // guards `audience` and settings.resource
  std::shared_ptr<const Audience> audience;  // null until the resource is known
  std::vector<std::unique_ptr<IssuerKeys>> issuers;  // as settings.issuers; fixed after start
  mutable detail::TokenMemo<Verified> verified;
  std::unique_ptr<TokenIntrospector> introspector;  // with settings.introspection
  mutable std::atomic<std::size_t> signature_checks{0};
  Clock clock;

  std::shared_ptr<const Audience> current_audience() const {
    std::lock_guard lock(mutex);
    return audience;
  }

  // The issuer a token names, by index; nullopt when it names none we trust.
  std::optional<std::size_t> issuer_of(std::string_view token) const {
    auto iss = token_issuer(token);
    if (!iss) return std::nullopt;
    for (std::size_t i = 0; i < issuers.size(); ++i) {
      if (issuers[i]->issuer == *iss) return i;
    }
    return std::nullopt;
  }

  // What must happen before a token can be decided.
  struct Wait {
    IssuerKeys* keys = nullptr;  // a fetch of this AS's keys
    bool introspect = false;     // an introspection of the (opaque) token
  };

  // What the cached keys (or remembered introspection answers) say; nullopt when only
  // newer keys or an introspection could decide (`final` false), and `*wait` says which.
  std::optional<AuthVerdict> decide(std::optional<std::string_view> token, bool final, Wait* wait = nullptr) const {
    auto where = current_audience();
    if (!where) return unavailable("the server is starting");
    const std::string& url = where->metadata_url;
    if (!token) return invalid_bearer(url, std::nullopt);
    auto now = clock();
    const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();

    // A token seen before costs a hash and a lookup: nothing of it is decoded again.
    auto digest = detail::token_digest(*token);
    if (auto hit = verified.find(digest, now_s)) {
      IssuerKeys& as = *issuers[hit->issuer];
      auto keys = as.snapshot(now);
      if (hit->keys_version == keys.version) {
        if (keys.stale) as.request_refresh();
        return hit->who;
      }
    }

    auto which = issuer_of(*token);
    if (!which) {
      bool jwt = token_issuer(*token).has_value();
      if (!jwt && introspector) {
        if (auto known = introspector->cached(*token)) return verdict_of(*known);
        if (!final && wait) {
          wait->introspect = true;
          return std::nullopt;
        }
        return unavailable("the token could not be introspected");
      }
      log::info("oauth_token_refused", {{"reason", jwt ? "wrong_issuer" : "malformed"}});
      return invalid_bearer(url, jwt ? "the token was issued by an authorization server this server does not trust"
                                     : "the token is not a JWT (three base64url parts)");
    }
    IssuerKeys& as = *issuers[*which];
    auto keys = as.snapshot(now);

    if (!keys.keys) {
      if (!final && keys.can_refresh && wait) {
        wait->keys = &as;
        return std::nullopt;
      }
      return unavailable("the authorization server's keys could not be fetched");
    }
    ++signature_checks;
    TokenRules rules{as.issuer, where->resource, settings.scopes, settings.skew, settings.accept_plain_jwt};
    auto checked = check_access_token(*token, *keys.keys, rules, now);
    if (auto* claims = std::get_if<AccessClaims>(&checked)) {
      if (keys.stale) as.request_refresh();
      Identity who{std::move(claims->subject), std::move(claims->issuer)};
      verified.put(digest, {*which, keys.version, who}, claims->expires_at + settings.skew.count());
      return who;
    }
    const auto& refusal = std::get<TokenRefusal>(checked);
    if (refusal.kind == TokenRefusal::Kind::unknown_key && !final && keys.can_refresh && wait) {
      wait->keys = &as;
      return std::nullopt;
    }
    if (refusal.kind == TokenRefusal::Kind::insufficient_scope) {
      return insufficient_scope(url, joined(rules.scopes));
    }
    log::info("oauth_token_refused", {{"reason", std::string(to_string(refusal.kind))}, {"issuer", as.issuer}});
    return invalid_bearer(url, refusal.message);
  }

  // The answer to an opaque token, from what the AS's introspection said about it.
  AuthVerdict verdict_of(const IntrospectedToken& token) const {
    auto where = current_audience();
    if (!where) return unavailable("the server is starting");
    const std::string& url = where->metadata_url;
    IntrospectionRules rules{settings.issuers, where->resource, settings.scopes, settings.skew};
    auto checked = check_introspected(token, rules, clock());
    if (auto* claims = std::get_if<AccessClaims>(&checked)) {
      return Identity{std::move(claims->subject), std::move(claims->issuer)};
    }
    const auto& refusal = std::get<TokenRefusal>(checked);
    if (refusal.kind == TokenRefusal::Kind::insufficient_scope) return insufficient_scope(url, joined(rules.scopes));
    log::info("oauth_token_refused", {{"reason", std::string(to_string(refusal.kind))}, {"via", "introspection"}});
    return invalid_bearer(url, refusal.message);
  }
};

OAuthResource::OAuthResource(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<OAuthResource>> OAuthResource::start(OAuthSettings settings, Fetch fetch, Clock clock,
                                                            TokenIntrospector::Post introspect) {
  if (settings.issuers.empty()) return Error{ErrorCode::invalid_argument, "--oauth-issuer: at least one is needed"};
  for (std::size_t i = 0; i < settings.issuers.size(); ++i) {
    if (auto ok = check_url("--oauth-issuer", settings.issuers[i]); !ok) return ok.error();
    for (std::size_t j = 0; j < i; ++j) {
      if (settings.issuers[j] == settings.issuers[i]) {
        return Error{ErrorCode::invalid_argument, "--oauth-issuer '" + settings.issuers[i] + "' is named twice"};
      }
    }
  }
  if (!settings.resource.empty()) {
    if (auto ok = check_url("--oauth-audience", settings.resource); !ok) return ok.error();
  }
  for (const auto& scope : settings.scopes) {
    bool ok = !scope.empty();
    for (char c : scope) ok = ok && c > 0x20 && c < 0x7f && c != '"' && c != '\\';
    if (!ok) return Error{ErrorCode::invalid_argument, "scope '" + scope + "' is not a scope token (RFC 6749 §3.3)"};
  }
  auto state = std::make_unique<State>(std::move(settings));
  if (!fetch) {
    fetch = [options = state->settings.fetch](const std::string& url) { return http_get(url, options); };
  }
  state->clock = clock ? std::move(clock) : [] { return SysClock::now(); };
  if (state->settings.introspection) {
    auto introspection = *state->settings.introspection;
    introspection.fetch = state->settings.fetch;
    auto started = TokenIntrospector::start(std::move(introspection), std::move(introspect), state->clock);
    if (!started) return started.error();
    state->introspector = std::move(*started);
  }
  State* s = state.get();
  for (const auto& issuer : state->settings.issuers) {
    state->issuers.push_back(std::make_unique<IssuerKeys>(
        issuer, state->settings, fetch, state->clock, [s](const std::string& token) { return *s->decide(token, true); }));
  }
  for (auto& as : state->issuers) as->start();
  return std::unique_ptr<OAuthResource>(new OAuthResource(std::move(state)));
}

OAuthResource::~OAuthResource() { stop(); }

void OAuthResource::stop() {
  if (state_->introspector) state_->introspector->stop();
  for (auto& as : state_->issuers) {
    for (auto& [token, done] : as->stop()) done(unavailable("the server is stopping"));
  }
}

Result<void> OAuthResource::set_resource(std::string resource) {
  if (auto ok = check_url("--oauth-audience", resource); !ok) return ok.error();
  auto audience = State::make_audience(resource);
  std::lock_guard lock(state_->mutex);
  state_->settings.resource = std::move(resource);
  state_->audience = std::move(audience);
  return {};
}

std::optional<AuthVerdict> OAuthResource::authenticate_cached(std::optional<std::string_view> token) const {
  State::Wait wait;
  auto verdict = state_->decide(token, false, &wait);
  if (!verdict && wait.keys) wait.keys->request_refresh();
  return verdict;
}

void OAuthResource::authenticate(std::optional<std::string_view> token, AuthDone done) const {
  State::Wait wait;
  if (auto verdict = state_->decide(token, false, &wait)) return done(std::move(*verdict));
  if (wait.introspect) {
    const State* s = state_.get();  // outlives the introspector, which stop() ends first
    state_->introspector->introspect(*token, [s, done = std::move(done)](TokenIntrospector::Answer answer) {
      if (!answer) return done(unavailable("the authorization server could not introspect the token"));
      done(s->verdict_of(*answer));
    });
    return;
  }
  if (!wait.keys->park(std::string(*token), done)) {
    done(unavailable("too many requests are waiting for the authorization server's keys"));
  }
}

std::size_t OAuthResource::introspections() const {
  return state_->introspector ? state_->introspector->requests() : 0;
}

std::string OAuthResource::metadata_json() const {
  std::lock_guard lock(state_->mutex);
  const auto& s = state_->settings;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&w](std::string_view v) { w.String(v.data(), static_cast<rapidjson::SizeType>(v.size())); };
  w.StartObject();
  w.Key("resource");
  str(s.resource);
  w.Key("authorization_servers");
  w.StartArray();
  for (const auto& issuer : s.issuers) str(issuer);
  w.EndArray();
  w.Key("scopes_supported");
  w.StartArray();
  for (const auto& scope : s.scopes) str(scope);
  w.EndArray();
  w.Key("bearer_methods_supported");
  w.StartArray();
  str("header");
  w.EndArray();
  w.Key("resource_name");
  str("dorm");
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string OAuthResource::metadata_url() const {
  auto where = state_->current_audience();
  return where ? where->metadata_url : std::string();
}

bool OAuthResource::is_metadata_path(std::string_view path) const {
  if (path == kProtectedResourceMetadataPath) return true;
  std::string url = metadata_url();
  auto parsed = boost::urls::parse_absolute_uri(url);
  return parsed && path == parsed->encoded_path();
}

std::size_t OAuthResource::key_fetches() const {
  std::size_t total = 0;
  for (const auto& as : state_->issuers) {
    std::lock_guard lock(as->mutex);
    total += as->fetches;
  }
  return total;
}

std::size_t OAuthResource::signature_checks() const { return state_->signature_checks.load(); }

}  // namespace dorm::mcp
