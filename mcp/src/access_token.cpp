#include "dorm/mcp/access_token.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <rapidjson/document.h>

#include <algorithm>

#include "json_text.hpp"

namespace dorm::mcp {

// A usable verification key: the algorithm is fixed by the key, never by a token.
struct KeySet::Key {
  std::string kid;
  std::string alg;  // "RS256", "ES256" or "EdDSA"
  std::shared_ptr<EVP_PKEY> pkey;
};

namespace {

using Key = KeySet::Key;

// A JWT bigger than this is not an access token anyone issues (and fits no header limit).
constexpr std::size_t kMaxTokenBytes = 16 * 1024;
// Below this an RSA signature is forgeable with public means (NIST SP 800-131A).
constexpr int kMinRsaBits = 2048;

Error bad_jwks(std::string why) {
  return Error{ErrorCode::invalid_argument, "JWKS: " + std::move(why)};
}

std::string_view view(const rapidjson::Value& v) { return {v.GetString(), v.GetStringLength()}; }

const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::optional<std::string_view> string_member(const rapidjson::Value& obj, const char* key) {
  const auto* v = member(obj, key);
  if (v == nullptr || !v->IsString()) return std::nullopt;
  return view(*v);
}

std::shared_ptr<EVP_PKEY> own(EVP_PKEY* pkey) {
  return std::shared_ptr<EVP_PKEY>(pkey, EVP_PKEY_free);
}

// EVP_PKEY_fromdata with the parameters `build` adds.
template <typename Build>
std::shared_ptr<EVP_PKEY> from_params(const char* type, Build build) {
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  if (bld == nullptr) return nullptr;
  std::vector<BIGNUM*> owned;
  OSSL_PARAM* params = nullptr;
  EVP_PKEY* pkey = nullptr;
  EVP_PKEY_CTX* ctx = nullptr;
  if (build(bld, owned) && (params = OSSL_PARAM_BLD_to_param(bld)) != nullptr &&
      (ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr)) != nullptr &&
      EVP_PKEY_fromdata_init(ctx) == 1) {
    if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) pkey = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* bn : owned) BN_free(bn);
  return pkey == nullptr ? nullptr : own(pkey);
}

BIGNUM* to_bignum(const std::string& bytes) {
  return BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                   static_cast<int>(bytes.size()), nullptr);
}

// The key of one JWK, nullopt when this server does not use such keys, or an error.
Result<std::optional<Key>> parse_key(const rapidjson::Value& jwk, std::size_t index) {
  std::string where = "key " + std::to_string(index) + ": ";
  if (!jwk.IsObject()) return bad_jwks(where + "must be a JSON object");
  auto kty = string_member(jwk, "kty");
  if (!kty) return bad_jwks(where + "\"kty\" is missing");
  if (auto use = string_member(jwk, "use"); use && *use != "sig") return std::optional<Key>();
  Key key;
  key.kid = std::string(string_member(jwk, "kid").value_or(""));
  auto field = [&](const char* name) -> Result<std::string> {
    auto text = string_member(jwk, name);
    if (!text) return bad_jwks(where + "\"" + name + "\" is missing");
    auto bytes = base64url_decode(*text);
    if (!bytes || bytes->empty()) return bad_jwks(where + "\"" + name + "\" is not base64url");
    return std::move(*bytes);
  };
  if (*kty == "RSA") {
    auto n = field("n");
    if (!n) return n.error();
    auto e = field("e");
    if (!e) return e.error();
    key.alg = "RS256";
    key.pkey = from_params("RSA", [&](OSSL_PARAM_BLD* bld, std::vector<BIGNUM*>& owned) {
      BIGNUM* bn_n = to_bignum(*n);
      BIGNUM* bn_e = to_bignum(*e);
      owned = {bn_n, bn_e};
      return bn_n && bn_e && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
             OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1;
    });
    if (key.pkey && EVP_PKEY_get_bits(key.pkey.get()) < kMinRsaBits) return std::optional<Key>();
  } else if (*kty == "EC") {
    if (string_member(jwk, "crv").value_or("") != "P-256") return std::optional<Key>();
    auto x = field("x");
    if (!x) return x.error();
    auto y = field("y");
    if (!y) return y.error();
    if (x->size() != 32 || y->size() != 32) return bad_jwks(where + "a P-256 coordinate must be 32 bytes");
    std::string point = "\x04" + *x + *y;  // SEC 1 uncompressed point
    key.alg = "ES256";
    key.pkey = from_params("EC", [&](OSSL_PARAM_BLD* bld, std::vector<BIGNUM*>&) {
      return OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
             OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) == 1;
    });
  } else if (*kty == "OKP") {
    if (string_member(jwk, "crv").value_or("") != "Ed25519") return std::optional<Key>();
    auto x = field("x");
    if (!x) return x.error();
    key.alg = "EdDSA";
    EVP_PKEY* raw = EVP_PKEY_new_raw_public_key(
        EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x->data()), x->size());
    if (raw != nullptr) key.pkey = own(raw);
  } else {
    return std::optional<Key>();
  }
  if (!key.pkey) return bad_jwks(where + "OpenSSL does not accept it as a " + std::string(*kty) + " public key");
  // A key that names its algorithm is used for that one only (RFC 7517 §4.4).
  if (auto alg = string_member(jwk, "alg"); alg && *alg != key.alg) return std::optional<Key>();
  return std::optional<Key>(std::move(key));
}

TokenRefusal refuse(TokenRefusal::Kind kind, std::string message) {
  return TokenRefusal{kind, std::move(message)};
}

// A JWS ES256 signature is r||s (32 bytes each); OpenSSL verifies the DER form.
std::optional<std::string> ecdsa_der(std::string_view raw) {
  if (raw.size() != 64) return std::nullopt;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  if (sig == nullptr) return std::nullopt;
  auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  BIGNUM* r = BN_bin2bn(bytes, 32, nullptr);
  BIGNUM* s = BN_bin2bn(bytes + 32, 32, nullptr);
  if (r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  int length = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (length <= 0) return std::nullopt;
  std::string out(reinterpret_cast<char*>(der), static_cast<std::size_t>(length));
  OPENSSL_free(der);
  return out;
}

bool verify(const Key& key, std::string_view signing_input, std::string_view signature) {
  std::string der;
  if (key.alg == "ES256") {
    auto converted = ecdsa_der(signature);
    if (!converted) return false;
    der = std::move(*converted);
    signature = der;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return false;
  const EVP_MD* md = key.alg == "EdDSA" ? nullptr : EVP_sha256();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, key.pkey.get()) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                             signature.size(),
                             reinterpret_cast<const unsigned char*>(signing_input.data()),
                             signing_input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

struct Parts {
  std::string_view header, payload, signature;  // base64url text
};

std::optional<Parts> split(std::string_view token) {
  auto first = token.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  auto second = token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return Parts{token.substr(0, first), token.substr(first + 1, second - first - 1),
               token.substr(second + 1)};
}

bool decode_json(std::string_view part, rapidjson::Document& doc) {
  auto text = base64url_decode(part);
  return text && !detail::parse_json(*text, doc) && doc.IsObject();
}

// `exp`, `nbf`: a NumericDate, which may carry a fraction.
std::optional<std::int64_t> numeric_date(const rapidjson::Value& claims, const char* name) {
  const auto* v = member(claims, name);
  if (v == nullptr || !v->IsNumber()) return std::nullopt;
  double seconds = v->GetDouble();
  if (!(seconds > -1e15 && seconds < 1e15)) return std::nullopt;
  return static_cast<std::int64_t>(seconds);
}

std::vector<std::string> granted_scopes(const rapidjson::Value& claims) {
  std::vector<std::string> out;
  if (auto scope = string_member(claims, "scope")) {
    std::size_t at = 0;
    while (at < scope->size()) {
      auto end = scope->find(' ', at);
      if (end == std::string_view::npos) end = scope->size();
      if (end > at) out.emplace_back(scope->substr(at, end - at));
      at = end + 1;
    }
  }
  if (const auto* scp = member(claims, "scp"); scp && scp->IsArray()) {
    for (const auto& s : scp->GetArray()) {
      if (s.IsString()) out.emplace_back(view(s));
    }
  }
  return out;
}

}  // namespace

Result<KeySet> KeySet::parse(std::string_view jwks_json) {
  rapidjson::Document doc;
  if (auto error = detail::parse_json(jwks_json, doc)) return bad_jwks("not valid JSON: " + *error);
  const auto* keys = member(doc, "keys");
  if (keys == nullptr || !keys->IsArray()) return bad_jwks("no \"keys\" array");
  KeySet set;
  std::size_t index = 0;
  for (const auto& jwk : keys->GetArray()) {
    auto key = parse_key(jwk, index++);
    if (!key) {
      set.skipped_.push_back(key.error().message);
    } else if (*key) {
      set.keys_.push_back(std::make_shared<const Key>(std::move(**key)));
    }
  }
  return set;
}

const KeySet::Key* KeySet::find(std::string_view kid) const {
  if (kid.empty()) return keys_.size() == 1 ? keys_.front().get() : nullptr;
  for (const auto& key : keys_) {
    if (key->kid == kid) return key.get();
  }
  return nullptr;
}

std::string_view to_string(TokenRefusal::Kind kind) {
  using K = TokenRefusal::Kind;
  switch (kind) {
    case K::malformed: return "malformed";
    case K::wrong_type: return "wrong_type";
    case K::unsupported_alg: return "unsupported_alg";
    case K::unknown_key: return "unknown_key";
    case K::alg_mismatch: return "alg_mismatch";
    case K::bad_signature: return "bad_signature";
    case K::wrong_issuer: return "wrong_issuer";
    case K::wrong_audience: return "wrong_audience";
    case K::expired: return "expired";
    case K::not_yet_valid: return "not_yet_valid";
    case K::missing_subject: return "missing_subject";
    case K::insufficient_scope: return "insufficient_scope";
    case K::inactive: return "inactive";
  }
  return "unknown";
}

std::optional<std::string> token_key_id(std::string_view token) {
  auto parts = split(token);
  rapidjson::Document header;
  if (!parts || !decode_json(parts->header, header)) return std::nullopt;
  return std::string(string_member(header, "kid").value_or(""));
}

std::optional<std::string> token_issuer(std::string_view token) {
  auto parts = split(token);
  rapidjson::Document claims;
  if (!parts || !decode_json(parts->payload, claims)) return std::nullopt;
  return std::string(string_member(claims, "iss").value_or(""));
}

std::variant<AccessClaims, TokenRefusal> check_access_token(
    std::string_view token, const KeySet& keys, const TokenRules& rules,
    std::chrono::system_clock::time_point now) {
  using K = TokenRefusal::Kind;
  if (token.size() > kMaxTokenBytes) return refuse(K::malformed, "the token is too long to be a JWT");
  auto parts = split(token);
  if (!parts) return refuse(K::malformed, "the token is not a JWT (three base64url parts)");
  rapidjson::Document header;
  rapidjson::Document claims;
  if (!decode_json(parts->header, header)) return refuse(K::malformed, "the JWT header is not a JSON object");
  if (!decode_json(parts->payload, claims)) return refuse(K::malformed, "the JWT claims are not a JSON object");
  auto signature = base64url_decode(parts->signature);
  if (!signature) return refuse(K::malformed, "the JWT signature is not base64url");
  if (member(header, "crit") != nullptr) return refuse(K::malformed, "the JWT header has \"crit\"");

  auto typ = string_member(header, "typ");
  bool typed = typ && (*typ == "at+jwt" || *typ == "application/at+jwt");
  bool plain = !typ || *typ == "JWT" || *typ == "jwt" || *typ == "application/jwt";
  if (!typed && !(plain && rules.accept_plain_jwt)) {
    return refuse(K::wrong_type, "the token's typ is not at+jwt (RFC 9068)");
  }
  auto alg = string_member(header, "alg").value_or("");
  if (alg != "RS256" && alg != "ES256" && alg != "EdDSA") {
    return refuse(K::unsupported_alg, "alg must be RS256, ES256 or EdDSA");
  }
  auto kid = string_member(header, "kid").value_or("");
  const Key* key = keys.find(kid);
  if (key == nullptr) return refuse(K::unknown_key, "no key of the authorization server has this kid");
  if (key->alg != alg) return refuse(K::alg_mismatch, "the token's alg is not its key's");
  std::string_view signing_input = token.substr(0, parts->header.size() + 1 + parts->payload.size());
  if (!verify(*key, signing_input, *signature)) return refuse(K::bad_signature, "the signature does not verify");

  AccessClaims out;
  out.issuer = std::string(string_member(claims, "iss").value_or(""));
  if (out.issuer != rules.issuer) return refuse(K::wrong_issuer, "the token was issued by another issuer");
  bool for_us = false;
  if (const auto* aud = member(claims, "aud")) {
    if (aud->IsString()) for_us = view(*aud) == rules.audience;
    if (aud->IsArray()) {
      for (const auto& a : aud->GetArray()) for_us = for_us || (a.IsString() && view(a) == rules.audience);
    }
  }
  if (!for_us) return refuse(K::wrong_audience, "the token is not for this resource (aud)");
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::int64_t skew = rules.skew.count();
  auto exp = numeric_date(claims, "exp");
  if (!exp) return refuse(K::expired, "the token has no exp");
  if (now_s >= *exp + skew) return refuse(K::expired, "the token has expired");
  if (auto nbf = numeric_date(claims, "nbf"); nbf && now_s < *nbf - skew) {
    return refuse(K::not_yet_valid, "the token is not valid yet (nbf)");
  }
  out.subject = std::string(string_member(claims, "sub").value_or(""));
  if (out.subject.empty()) return refuse(K::missing_subject, "the token has no sub");
  out.client_id = std::string(string_member(claims, "client_id").value_or(""));
  out.expires_at = *exp;
  out.scopes = granted_scopes(claims);
  for (const auto& wanted : rules.scopes) {
    if (std::find(out.scopes.begin(), out.scopes.end(), wanted) == out.scopes.end()) {
      return refuse(K::insufficient_scope, "the token lacks the scope " + wanted);
    }
  }
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string standard;
  standard.reserve(text.size() + 3);
  for (char c : text) {
    bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) standard += c;
    else if (c == '-') standard += '+';
    else if (c == '_') standard += '/';
    else return std::nullopt;
  }
  std::size_t padding = (4 - standard.size() % 4) % 4;
  standard.append(padding, '=');
  std::string out(standard.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(standard.data()),
                          static_cast<int>(standard.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - padding);
  // The last character of an unpadded text carries a few bits that belong to no byte;
  // RFC 4648 section 3.5 lets a decoder refuse them when they are not zero. Refusing keeps
  // one encoding per value, so a signature cannot be spelled two ways.
  if (base64url_encode(out) != text) return std::nullopt;
  return out;
}

std::string base64url_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

}  // namespace dorm::mcp
