#include "dorm/mcp/oauth_resource.hpp"

#include <boost/url/parse.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/runtime/log.hpp"
#include "json_text.hpp"

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

struct OAuthResource::State {
  OAuthSettings settings;  // `resource` is guarded by mutex (set_resource)
  Fetch fetch;
  Clock clock;

  mutable std::mutex mutex;  // guards everything below and settings.resource
  mutable std::condition_variable wake;
  std::shared_ptr<const KeySet> keys;  // null until a JWKS was read
  SysClock::time_point keys_loaded{};
  SysClock::time_point last_fetch{};
  bool fetched_once = false;
  bool fetching = false;
  mutable bool refresh_wanted = true;  // the first load
  bool stopping = false;
  std::string jwks_uri;  // from the AS metadata; cleared when the JWKS cannot be read
  mutable std::vector<std::pair<std::string, AuthDone>> parked;
  std::size_t fetches = 0;
  std::thread thread;

  std::string metadata_url_locked() const { return protected_resource_metadata_url(settings.resource); }

  // A fetch may start now: the first one, or min_key_refresh after the last.
  bool may_fetch_locked(SysClock::time_point now) const {
    return !fetched_once || now - last_fetch >= settings.min_key_refresh;
  }

  // What the cached keys say; nullopt when only newer keys could decide (and a fetch
  // may bring them: `final` false).
  std::optional<AuthVerdict> decide(std::optional<std::string_view> token, bool final) const {
    std::unique_lock lock(mutex);
    const std::string url = metadata_url_locked();
    if (settings.resource.empty()) return unavailable("the server is starting");
    if (!token) return invalid_bearer(url, std::nullopt);
    auto now = clock();
    auto current = keys;
    bool stale = current && now - keys_loaded >= settings.max_key_age;
    bool can_refresh = !stopping && (fetching || may_fetch_locked(now));
    TokenRules rules{settings.issuer, settings.resource, settings.scopes, settings.skew};
    lock.unlock();

    if (!current) {
      if (!final && can_refresh) return std::nullopt;
      return unavailable("the authorization server's keys could not be fetched");
    }
    auto checked = check_access_token(*token, *current, rules, now);
    if (auto* claims = std::get_if<AccessClaims>(&checked)) {
      if (stale) request_refresh();
      return Identity{std::move(claims->subject), std::move(claims->issuer)};
    }
    const auto& refusal = std::get<TokenRefusal>(checked);
    if (refusal.kind == TokenRefusal::Kind::unknown_key && !final && can_refresh) return std::nullopt;
    if (refusal.kind == TokenRefusal::Kind::insufficient_scope) {
      return insufficient_scope(url, joined(rules.scopes));
    }
    log::info("oauth_token_refused", {{"reason", std::string(to_string(refusal.kind))}});
    return invalid_bearer(url, refusal.message);
  }

  void request_refresh() const {
    {
      std::lock_guard lock(mutex);
      refresh_wanted = true;
    }
    wake.notify_one();
  }

  // The AS metadata's jwks_uri, checking that it names our issuer.
  Result<std::string> discover() {
    std::string errors;
    for (const auto& url : metadata_urls(settings.issuer)) {
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
      auto issuer = doc.FindMember("issuer");
      if (issuer == doc.MemberEnd() || !issuer->value.IsString() || issuer->value.GetString() != settings.issuer) {
        // RFC 8414 §3.3: metadata naming another issuer must not be used (a mix-up).
        errors += (errors.empty() ? "" : "; ") + url + ": its \"issuer\" is not " + settings.issuer;
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
      log::warn("oauth_keys_unavailable", {{"issuer", settings.issuer}, {"error", loaded.error().message}});
      return;
    }
    jwks_uri = uri;
    keys = std::move(*loaded);
    keys_loaded = clock();
    log::info("oauth_keys_loaded", {{"issuer", settings.issuer},
                                    {"jwks_uri", uri},
                                    {"keys", static_cast<std::int64_t>(keys->size())}});
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
      auto waiting = std::move(parked);
      parked.clear();
      lock.unlock();
      for (auto& [token, done] : waiting) done(*decide(token, true));
      lock.lock();
    }
  }
};

OAuthResource::OAuthResource(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<OAuthResource>> OAuthResource::start(OAuthSettings settings, Fetch fetch, Clock clock) {
  if (auto ok = check_url("--oauth-issuer", settings.issuer); !ok) return ok.error();
  if (!settings.resource.empty()) {
    if (auto ok = check_url("--oauth-audience", settings.resource); !ok) return ok.error();
  }
  for (const auto& scope : settings.scopes) {
    bool ok = !scope.empty();
    for (char c : scope) ok = ok && c > 0x20 && c < 0x7f && c != '"' && c != '\\';
    if (!ok) return Error{ErrorCode::invalid_argument, "scope '" + scope + "' is not a scope token (RFC 6749 §3.3)"};
  }
  auto state = std::make_unique<State>();
  state->settings = std::move(settings);
  state->fetch = fetch ? std::move(fetch) : [options = state->settings.fetch](const std::string& url) {
    return http_get(url, options);
  };
  state->clock = clock ? std::move(clock) : [] { return SysClock::now(); };
  state->thread = std::thread([s = state.get()] { s->run(); });
  return std::unique_ptr<OAuthResource>(new OAuthResource(std::move(state)));
}

OAuthResource::~OAuthResource() { stop(); }

void OAuthResource::stop() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  std::vector<std::pair<std::string, AuthDone>> waiting;
  {
    std::lock_guard lock(state_->mutex);
    waiting = std::move(state_->parked);
    state_->parked.clear();
  }
  for (auto& [token, done] : waiting) done(unavailable("the server is stopping"));
}

Result<void> OAuthResource::set_resource(std::string resource) {
  if (auto ok = check_url("--oauth-audience", resource); !ok) return ok.error();
  std::lock_guard lock(state_->mutex);
  state_->settings.resource = std::move(resource);
  return {};
}

std::optional<AuthVerdict> OAuthResource::authenticate_cached(std::optional<std::string_view> token) const {
  auto verdict = state_->decide(token, false);
  if (!verdict) state_->request_refresh();
  return verdict;
}

void OAuthResource::authenticate(std::optional<std::string_view> token, AuthDone done) const {
  if (auto verdict = state_->decide(token, false)) return done(std::move(*verdict));
  {
    std::unique_lock lock(state_->mutex);
    if (state_->stopping || state_->parked.size() >= state_->settings.max_parked) {
      lock.unlock();
      return done(unavailable("too many requests are waiting for the authorization server's keys"));
    }
    state_->parked.emplace_back(std::string(*token), std::move(done));
    state_->refresh_wanted = true;
  }
  state_->wake.notify_one();
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
  str(s.issuer);
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
  std::lock_guard lock(state_->mutex);
  return state_->metadata_url_locked();
}

bool OAuthResource::is_metadata_path(std::string_view path) const {
  if (path == kProtectedResourceMetadataPath) return true;
  std::string url = metadata_url();
  auto parsed = boost::urls::parse_absolute_uri(url);
  return parsed && path == parsed->encoded_path();
}

std::size_t OAuthResource::key_fetches() const {
  std::lock_guard lock(state_->mutex);
  return state_->fetches;
}

}  // namespace dorm::mcp
