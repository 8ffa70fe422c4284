#include "dorm/mcp/token_introspection.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>

#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "dorm/mcp/listen_address.hpp"
#include "dorm/runtime/log.hpp"
#include "json_text.hpp"
#include "token_memo.hpp"

namespace dorm::mcp {
namespace {

using SysClock = std::chrono::system_clock;

std::int64_t seconds_of(SysClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::string form_encode(std::string_view text) { return boost::urls::encode(text, boost::urls::unreserved_chars); }

// HTTP Basic credentials of an OAuth client: each part form-encoded first (RFC 6749 §2.3.1).
std::string basic_authorization(const std::string& id, const std::string& secret) {
  std::string pair = form_encode(id) + ":" + form_encode(secret);
  std::string out(4 * ((pair.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(pair.data()), static_cast<int>(pair.size()));
  out.resize(static_cast<std::size_t>(n));
  return "Basic " + out;
}

std::optional<std::int64_t> numeric_date(const rapidjson::Value& doc, const char* name) {
  auto it = doc.FindMember(name);
  if (it == doc.MemberEnd() || !it->value.IsNumber()) return std::nullopt;
  double seconds = it->value.GetDouble();
  if (!(seconds > -1e15 && seconds < 1e15)) return std::nullopt;
  return static_cast<std::int64_t>(seconds);
}

std::string string_of(const rapidjson::Value& doc, const char* name) {
  auto it = doc.FindMember(name);
  if (it == doc.MemberEnd() || !it->value.IsString()) return "";
  return {it->value.GetString(), it->value.GetStringLength()};
}

TokenRefusal refuse(TokenRefusal::Kind kind, std::string message) { return TokenRefusal{kind, std::move(message)}; }

}  // namespace

Result<IntrospectedToken> parse_introspection(std::string_view json) {
  rapidjson::Document doc;
  if (auto error = detail::parse_json(json, doc)) {
    return Error{ErrorCode::invalid_argument, "the introspection answer is not JSON: " + *error};
  }
  if (!doc.IsObject()) return Error{ErrorCode::invalid_argument, "the introspection answer is not a JSON object"};
  auto active = doc.FindMember("active");
  if (active == doc.MemberEnd() || !active->value.IsBool()) {
    return Error{ErrorCode::invalid_argument, "the introspection answer has no boolean \"active\" (RFC 7662 §2.2)"};
  }
  IntrospectedToken out;
  out.active = active->value.GetBool();
  out.issuer = string_of(doc, "iss");
  out.subject = string_of(doc, "sub");
  out.client_id = string_of(doc, "client_id");
  if (auto aud = doc.FindMember("aud"); aud != doc.MemberEnd()) {
    if (aud->value.IsString()) out.audience.emplace_back(aud->value.GetString(), aud->value.GetStringLength());
    if (aud->value.IsArray()) {
      for (const auto& a : aud->value.GetArray()) {
        if (a.IsString()) out.audience.emplace_back(a.GetString(), a.GetStringLength());
      }
    }
  }
  std::string scope = string_of(doc, "scope");
  for (std::size_t at = 0; at < scope.size();) {
    auto end = std::min(scope.find(' ', at), scope.size());
    if (end > at) out.scopes.push_back(scope.substr(at, end - at));
    at = end + 1;
  }
  out.expires_at = numeric_date(doc, "exp");
  out.not_before = numeric_date(doc, "nbf");
  return out;
}

std::variant<AccessClaims, TokenRefusal> check_introspected(const IntrospectedToken& token,
                                                             const IntrospectionRules& rules,
                                                             SysClock::time_point now) {
  using K = TokenRefusal::Kind;
  if (!token.active) return refuse(K::inactive, "the authorization server says the token is not active");
  AccessClaims out;
  if (token.issuer.empty()) {
    out.issuer = rules.issuers.empty() ? "" : rules.issuers.front();
  } else if (std::find(rules.issuers.begin(), rules.issuers.end(), token.issuer) != rules.issuers.end()) {
    out.issuer = token.issuer;
  } else {
    return refuse(K::wrong_issuer, "the token was issued by an authorization server this server does not trust");
  }
  if (!token.audience.empty() &&
      std::find(token.audience.begin(), token.audience.end(), rules.audience) == token.audience.end()) {
    return refuse(K::wrong_audience, "the token is not for this resource (aud)");
  }
  const std::int64_t now_s = seconds_of(now);
  const std::int64_t skew = rules.skew.count();
  if (token.expires_at && now_s >= *token.expires_at + skew) return refuse(K::expired, "the token has expired");
  if (token.not_before && now_s < *token.not_before - skew) {
    return refuse(K::not_yet_valid, "the token is not valid yet (nbf)");
  }
  out.subject = !token.subject.empty() ? token.subject : token.client_id;
  if (out.subject.empty()) return refuse(K::missing_subject, "the introspection answer names no sub or client_id");
  out.client_id = token.client_id;
  out.expires_at = token.expires_at.value_or(0);
  out.scopes = token.scopes;
  for (const auto& wanted : rules.scopes) {
    if (std::find(out.scopes.begin(), out.scopes.end(), wanted) == out.scopes.end()) {
      return refuse(K::insufficient_scope, "the token lacks the scope " + wanted);
    }
  }
  return out;
}

struct TokenIntrospector::State {
  explicit State(IntrospectionSettings s) : settings(std::move(s)), memo(settings.cache_size) {}

  IntrospectionSettings settings;
  Post post;
  Clock clock;
  std::string authorization;
  detail::TokenMemo<IntrospectedToken> memo;

  std::mutex mutex;  // guards everything below
  std::condition_variable wake;
  // Tokens to introspect, oldest first, each with everyone waiting for it: a token asked
  // for again while queued or in flight joins the waiters instead of being sent twice.
  std::deque<detail::TokenDigest> queue;
  struct Waiting {
    std::string token;
    std::vector<Done> done;
  };
  std::map<detail::TokenDigest, Waiting> waiting;
  std::size_t waiters = 0;
  std::size_t requests = 0;
  bool stopping = false;
  std::vector<std::thread> threads;

  // How long an answer may be kept: the TTL, and for an active token no later than exp.
  std::int64_t keep_until(const IntrospectedToken& t) const {
    std::int64_t until = seconds_of(clock()) + settings.cache_ttl.count();
    if (t.active && t.expires_at) until = std::min(until, *t.expires_at);
    return until;
  }

  Answer exchange(const std::string& token) {
    auto body = post(settings.url, "token=" + form_encode(token) + "&token_type_hint=access_token", authorization);
    if (!body) return body.error();
    auto parsed = parse_introspection(*body);
    if (!parsed) return Error{ErrorCode::io_error, settings.url + ": " + parsed.error().message};
    return parsed;
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [this] { return stopping || !queue.empty(); });
      if (stopping) return;
      auto digest = queue.front();
      queue.pop_front();
      std::string token = waiting[digest].token;
      ++requests;
      lock.unlock();
      auto answer = exchange(token);
      if (answer) {
        memo.put(digest, *answer, keep_until(*answer));
      } else {
        log::warn("oauth_introspection_failed", {{"url", settings.url}, {"error", answer.error().message}});
      }
      lock.lock();
      auto node = waiting.extract(digest);
      waiters -= node.mapped().done.size();
      lock.unlock();
      for (auto& done : node.mapped().done) done(answer);
      lock.lock();
    }
  }
};

TokenIntrospector::TokenIntrospector(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<TokenIntrospector>> TokenIntrospector::start(IntrospectionSettings settings, Post post,
                                                                    Clock clock) {
  auto bad = [](std::string why) { return Error{ErrorCode::invalid_argument, std::move(why)}; };
  auto url = boost::urls::parse_absolute_uri(settings.url);
  if (!url || (url->scheme() != "https" && url->scheme() != "http") || url->host().empty() || url->has_fragment()) {
    return bad("--oauth-introspection-url '" + settings.url + "' must be an absolute http(s) URL without a fragment");
  }
  if (url->scheme() == "http" && !settings.fetch.allow_http && !is_loopback_host(url->host_address())) {
    return bad("--oauth-introspection-url '" + settings.url +
               "': plain http:// only to a loopback host (or with --oauth-allow-http)");
  }
  if (settings.client_id.empty() || settings.client_secret.empty()) {
    return bad("token introspection needs dorm's client id and secret at the authorization server "
               "(--oauth-client-id, --oauth-client-secret-file)");
  }
  if (settings.threads == 0) return bad("token introspection needs at least one thread");
  auto state = std::make_unique<State>(std::move(settings));
  state->authorization = basic_authorization(state->settings.client_id, state->settings.client_secret);
  state->post = post ? std::move(post)
                     : Post([options = state->settings.fetch](const std::string& to, const std::string& form,
                                                              const std::string& authorization) {
                         return http_post_form(to, form, authorization, options);
                       });
  state->clock = clock ? std::move(clock) : [] { return SysClock::now(); };
  for (std::size_t i = 0; i < state->settings.threads; ++i) {
    state->threads.emplace_back([s = state.get()] { s->run(); });
  }
  return std::unique_ptr<TokenIntrospector>(new TokenIntrospector(std::move(state)));
}

TokenIntrospector::~TokenIntrospector() { stop(); }

void TokenIntrospector::stop() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  for (auto& t : state_->threads) {
    if (t.joinable()) t.join();
  }
  std::map<detail::TokenDigest, State::Waiting> left;
  {
    std::lock_guard lock(state_->mutex);
    left = std::exchange(state_->waiting, {});
    state_->queue.clear();
    state_->waiters = 0;
  }
  for (auto& [digest, w] : left) {
    for (auto& done : w.done) done(Error{ErrorCode::io_error, "the server is stopping"});
  }
}

std::optional<IntrospectedToken> TokenIntrospector::cached(std::string_view token) const {
  return state_->memo.find(detail::token_digest(token), seconds_of(state_->clock()));
}

void TokenIntrospector::introspect(std::string_view token, Done done) {
  auto digest = detail::token_digest(token);
  if (auto known = state_->memo.find(digest, seconds_of(state_->clock()))) return done(std::move(*known));
  {
    std::unique_lock lock(state_->mutex);
    if (state_->stopping || state_->waiters >= state_->settings.max_waiting) {
      lock.unlock();
      return done(Error{ErrorCode::io_error, "too many tokens are waiting for introspection"});
    }
    auto [slot, fresh] = state_->waiting.try_emplace(digest);
    slot->second.done.push_back(std::move(done));
    ++state_->waiters;
    if (!fresh) return;  // queued or in flight already: this request shares its answer
    slot->second.token = std::string(token);
    state_->queue.push_back(digest);
  }
  state_->wake.notify_one();
}

std::size_t TokenIntrospector::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

}  // namespace dorm::mcp
