// check_access_token and KeySet: every row of the table in access_token.hpp, with keys
// generated for the run (jwt_signer.hpp). Time is a fixed instant passed in.
#include "dorm/mcp/access_token.hpp"

#include <doctest/doctest.h>

#include "jwt_signer.hpp"

using namespace dorm::mcp;
using testkit::TestKey;

namespace {

constexpr std::int64_t kNow = 1'800'000'000;
const auto kNowPoint = std::chrono::system_clock::time_point(std::chrono::seconds(kNow));
const char* const kIssuer = "https://as.example";
const char* const kResource = "http://127.0.0.1:8808/mcp";

TokenRules rules(std::vector<std::string> scopes = {"mcp"}) {
  return TokenRules{kIssuer, kResource, std::move(scopes), std::chrono::seconds(60)};
}

// Claims with one member replaced or added (`extra` is JSON members text, may be empty).
std::string claims(const std::string& extra = "", std::int64_t exp = kNow + 300,
                   const std::string& aud = std::string("\"") + kResource + "\"") {
  std::string out = std::string("{\"iss\":\"") + kIssuer + "\",\"sub\":\"alice\",\"aud\":" + aud +
                    ",\"exp\":" + std::to_string(exp) + ",\"iat\":" + std::to_string(kNow - 10) +
                    ",\"scope\":\"openid mcp\",\"client_id\":\"cli\"";
  if (!extra.empty()) out += "," + extra;
  return out + "}";
}

TokenRefusal::Kind refusal_of(const std::variant<AccessClaims, TokenRefusal>& v) {
  REQUIRE(std::holds_alternative<TokenRefusal>(v));
  return std::get<TokenRefusal>(v).kind;
}

KeySet set_of(std::initializer_list<const TestKey*> keys) {
  auto parsed = KeySet::parse(testkit::jwks_of(keys));
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

}  // namespace

TEST_CASE("access token: a token signed by the AS's key, for this resource, is accepted (RS256, ES256, EdDSA)") {
  for (const char* alg : {"RS256", "ES256", "EdDSA"}) {
    CAPTURE(alg);
    TestKey key(alg, std::string("k-") + alg);
    auto keys = set_of({&key});
    auto v = check_access_token(key.sign(claims()), keys, rules(), kNowPoint);
    REQUIRE(std::holds_alternative<AccessClaims>(v));
    const auto& c = std::get<AccessClaims>(v);
    CHECK(c.issuer == kIssuer);
    CHECK(c.subject == "alice");
    CHECK(c.client_id == "cli");
    CHECK(c.expires_at == kNow + 300);
    CHECK(c.scopes == std::vector<std::string>{"openid", "mcp"});
  }
}

TEST_CASE("access token: aud may be an array that contains this resource") {
  TestKey key("ES256", "k1");
  auto keys = set_of({&key});
  auto token = key.sign(claims("", kNow + 300, std::string("[\"https://other\",\"") + kResource + "\"]"));
  CHECK(std::holds_alternative<AccessClaims>(check_access_token(token, keys, rules(), kNowPoint)));
}

TEST_CASE("access token: every refusal of the table") {
  TestKey rsa("RS256", "rsa-1");
  TestKey ec("ES256", "ec-1");
  TestKey stranger("RS256", "rsa-1");  // same kid, another key: a forger's
  auto keys = set_of({&rsa, &ec});
  using K = TokenRefusal::Kind;
  auto check = [&](const std::string& token, std::vector<std::string> scopes = {"mcp"}) {
    return refusal_of(check_access_token(token, keys, rules(std::move(scopes)), kNowPoint));
  };

  SUBCASE("another audience (a token minted for another server)") {
    CHECK(check(rsa.sign(claims("", kNow + 300, "\"https://other.example/mcp\""))) == K::wrong_audience);
    CHECK(check(rsa.sign(claims("", kNow + 300, "[]"))) == K::wrong_audience);
  }
  SUBCASE("no aud at all") {
    std::string c = std::string("{\"iss\":\"") + kIssuer + "\",\"sub\":\"a\",\"exp\":" + std::to_string(kNow + 60) + "}";
    CHECK(check(rsa.sign(c)) == K::wrong_audience);
  }
  SUBCASE("expired, beyond the skew; within it, still accepted") {
    CHECK(check(rsa.sign(claims("", kNow - 61))) == K::expired);
    CHECK(check(rsa.sign(claims("", kNow - 60))) == K::expired);
    CHECK(std::holds_alternative<AccessClaims>(
        check_access_token(rsa.sign(claims("", kNow - 59)), keys, rules(), kNowPoint)));
  }
  SUBCASE("no exp") {
    std::string c = std::string("{\"iss\":\"") + kIssuer + "\",\"sub\":\"a\",\"aud\":\"" + kResource + "\"}";
    CHECK(check(rsa.sign(c)) == K::expired);
  }
  SUBCASE("nbf in the future, beyond the skew") {
    CHECK(check(rsa.sign(claims("\"nbf\":" + std::to_string(kNow + 120)))) == K::not_yet_valid);
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(
        rsa.sign(claims("\"nbf\":" + std::to_string(kNow + 30))), keys, rules(), kNowPoint)));
  }
  SUBCASE("unknown kid") {
    TestKey other("RS256", "rsa-2");
    CHECK(check(other.sign(claims())) == K::unknown_key);
  }
  SUBCASE("alg none, with or without a signature") {
    std::string header = R"({"alg":"none","typ":"at+jwt","kid":"rsa-1"})";
    std::string unsigned_token = TestKey::b64(header) + "." + TestKey::b64(claims()) + ".";
    CHECK(check(unsigned_token) == K::unsupported_alg);
    CHECK(check(rsa.sign(claims(), header)) == K::unsupported_alg);
  }
  SUBCASE("HS256 keyed with the public key (the classic confusion) is not an algorithm here") {
    CHECK(check(rsa.sign(claims(), R"({"alg":"HS256","typ":"at+jwt","kid":"rsa-1"})")) == K::unsupported_alg);
  }
  SUBCASE("alg of the header is not the key's") {
    // Signed with the EC key but naming the RSA key's kid, and the other way round.
    CHECK(check(ec.sign(claims(), R"({"alg":"ES256","typ":"at+jwt","kid":"rsa-1"})")) == K::alg_mismatch);
    CHECK(check(rsa.sign(claims(), R"({"alg":"RS256","typ":"at+jwt","kid":"ec-1"})")) == K::alg_mismatch);
  }
  SUBCASE("bad signature: another key with the same kid, or the claims changed after signing") {
    CHECK(check(stranger.sign(claims())) == K::bad_signature);
    std::string token = rsa.sign(claims());
    auto first = token.find('.');
    auto second = token.find('.', first + 1);
    std::string forged = token.substr(0, first + 1) +
                         TestKey::b64(claims("\"admin\":true")) + token.substr(second);
    CHECK(check(forged) == K::bad_signature);
    std::string ec_token = ec.sign(claims());
    CHECK(check(ec_token.substr(0, ec_token.rfind('.') + 1) + TestKey::b64(std::string(64, '\1'))) == K::bad_signature);
    CHECK(check(ec_token.substr(0, ec_token.rfind('.') + 1) + TestKey::b64("short")) == K::bad_signature);
  }
  SUBCASE("a required scope missing") {
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(rsa.sign(claims()), keys, rules({"mcp"}), kNowPoint)));
    CHECK(check(rsa.sign(claims()), {"mcp", "admin"}) == K::insufficient_scope);
  }
  SUBCASE("scopes in scp (an array) count too") {
    std::string c = std::string("{\"iss\":\"") + kIssuer + "\",\"sub\":\"a\",\"aud\":\"" + kResource +
                    "\",\"exp\":" + std::to_string(kNow + 60) + ",\"scp\":[\"admin\"]}";
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(rsa.sign(c), keys, rules({"admin"}), kNowPoint)));
  }
  SUBCASE("another issuer") {
    std::string c = claims();
    c.replace(c.find(kIssuer), std::string(kIssuer).size(), "https://evil.example");
    CHECK(check(rsa.sign(c)) == K::wrong_issuer);
  }
  SUBCASE("no sub") {
    std::string c = std::string("{\"iss\":\"") + kIssuer + "\",\"aud\":\"" + kResource +
                    "\",\"exp\":" + std::to_string(kNow + 60) + ",\"scope\":\"mcp\"}";
    CHECK(check(rsa.sign(c)) == K::missing_subject);
  }
  SUBCASE("typ other than at+jwt (an ID token, say)") {
    CHECK(check(rsa.sign(claims(), R"({"alg":"RS256","typ":"JWT","kid":"rsa-1"})")) == K::wrong_type);
    CHECK(check(rsa.sign(claims(), R"({"alg":"RS256","kid":"rsa-1"})")) == K::wrong_type);
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(
        rsa.sign(claims(), R"({"alg":"RS256","typ":"application/at+jwt","kid":"rsa-1"})"), keys, rules(), kNowPoint)));
  }
  SUBCASE("malformed tokens") {
    CHECK(check("") == K::malformed);
    CHECK(check("abc") == K::malformed);
    CHECK(check("a.b") == K::malformed);
    CHECK(check("a.b.c.d") == K::malformed);
    CHECK(check("!!!.e30.AA") == K::malformed);
    CHECK(check(TestKey::b64("not json") + "." + TestKey::b64("{}") + ".AA") == K::malformed);
    CHECK(check(TestKey::b64("[1]") + "." + TestKey::b64("{}") + ".AA") == K::malformed);
    std::string token = rsa.sign(claims());
    CHECK(check(token + "=") == K::malformed);  // padding is not base64url
    CHECK(check(std::string(20000, 'a') + ".b.c") == K::malformed);
    CHECK(check(rsa.sign(claims(), R"({"alg":"RS256","typ":"at+jwt","kid":"rsa-1","crit":["exp"]})")) == K::malformed);
  }
}

TEST_CASE("key set: unusable and broken keys are skipped, a lone key needs no kid") {
  TestKey rsa("RS256", "");
  auto lone = set_of({&rsa});
  CHECK(lone.size() == 1);
  CHECK(lone.find("") != nullptr);
  auto token = rsa.sign(claims(), R"({"alg":"RS256","typ":"at+jwt"})");
  CHECK(std::holds_alternative<AccessClaims>(check_access_token(token, lone, rules(), kNowPoint)));

  auto skipped = KeySet::parse(
      R"({"keys":[{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"},{"kty":"oct","k":"c2VjcmV0"},)"
      R"({"kty":"EC","crv":"P-384","x":"AA","y":"AA"},{"kty":"RSA","kid":"small","n":"AQAB","e":"AQAB"}]})");
  REQUIRE(skipped.ok());
  CHECK(skipped->size() == 0);

  TestKey ec("ES256", "ec");
  std::string labelled = R"({"keys":[)" + ec.jwk(true) + "]}";
  REQUIRE(KeySet::parse(labelled).ok());
  CHECK(KeySet::parse(labelled)->size() == 1);

  CHECK(skipped->skipped().empty());  // keys of kinds we do not use are no news

  CHECK_FALSE(KeySet::parse("[]").ok());
  CHECK_FALSE(KeySet::parse("{}").ok());
  CHECK_FALSE(KeySet::parse(R"({"keys":{}})").ok());

  // A broken key costs only itself (RFC 7517 §5): the good key beside it still verifies,
  // and each broken one is named with its index and what is wrong with it.
  std::string mixed = R"({"keys":[{"kty":"RSA","kid":"a","n":"!!","e":"AQAB"},)"
                      R"({"kty":"EC","kid":"b","crv":"P-256","x":"AAAA","y":"AAAA"},{"n":"AQAB"},7,)" +
                      ec.jwk() + "]}";
  auto partly = KeySet::parse(mixed);
  REQUIRE(partly.ok());
  CHECK(partly->size() == 1);
  REQUIRE(partly->skipped().size() == 4);
  CHECK(partly->skipped()[0] == "JWKS: key 0: \"n\" is not base64url");
  CHECK(partly->skipped()[1] == "JWKS: key 1: a P-256 coordinate must be 32 bytes");
  CHECK(partly->skipped()[2] == "JWKS: key 2: \"kty\" is missing");
  CHECK(partly->skipped()[3] == "JWKS: key 3: must be a JSON object");
  CHECK(std::holds_alternative<AccessClaims>(check_access_token(ec.sign(claims()), *partly, rules(), kNowPoint)));
}

TEST_CASE("typ: at+jwt always; JWT or none only when the rules accept plain JWTs; other types never") {
  TestKey key("ES256", "k");
  auto keys = set_of({&key});
  auto with_typ = [&](const std::string& typ) {
    std::string header = R"({"alg":"ES256","kid":"k")" + (typ.empty() ? "" : R"(,"typ":")" + typ + "\"") + "}";
    return key.sign(claims(), header);
  };
  auto plain = rules();
  plain.accept_plain_jwt = true;
  for (std::string typ : {"at+jwt", "application/at+jwt"}) {
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(with_typ(typ), keys, rules(), kNowPoint)));
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(with_typ(typ), keys, plain, kNowPoint)));
  }
  for (std::string typ : {"JWT", "jwt", "application/jwt", ""}) {
    auto strict = check_access_token(with_typ(typ), keys, rules(), kNowPoint);
    REQUIRE(std::holds_alternative<TokenRefusal>(strict));
    CHECK(std::get<TokenRefusal>(strict).kind == TokenRefusal::Kind::wrong_type);
    CHECK(std::holds_alternative<AccessClaims>(check_access_token(with_typ(typ), keys, plain, kNowPoint)));
  }
  for (std::string typ : {"dpop+jwt", "logout+jwt", "secevent+jwt"}) {
    auto refused = check_access_token(with_typ(typ), keys, plain, kNowPoint);
    REQUIRE(std::holds_alternative<TokenRefusal>(refused));
    CHECK(std::get<TokenRefusal>(refused).kind == TokenRefusal::Kind::wrong_type);
  }
}

TEST_CASE("base64url: round trip, and the characters and padding it refuses") {
  for (std::string s : {"", "f", "fo", "foo", "foob", "\xff\xfe\x00\x01"}) {
    CHECK(base64url_decode(base64url_encode(s)) == s);
  }
  CHECK(base64url_encode("\xfb\xff") == "-_8");
  CHECK_FALSE(base64url_decode("ab+/").has_value());
  CHECK_FALSE(base64url_decode("YQ==").has_value());
  CHECK_FALSE(base64url_decode("Y Q").has_value());
  CHECK_FALSE(base64url_decode("a").has_value());
  // "QQ" is "A"; "QR" spells the same byte with a non-zero spare bit.
  CHECK(base64url_decode("QQ") == std::string("A"));
  CHECK_FALSE(base64url_decode("QR").has_value());
}

TEST_CASE("token_key_id reads the kid without checking anything else") {
  TestKey key("ES256", "the-kid");
  CHECK(token_key_id(key.sign(claims())) == "the-kid");
  CHECK(token_key_id(key.sign(claims(), R"({"alg":"ES256"})")) == "");
  CHECK_FALSE(token_key_id("garbage").has_value());
}

TEST_CASE("token_issuer reads iss without verifying anything") {
  TestKey key("ES256", "k");
  CHECK(token_issuer(key.sign(claims())) == kIssuer);
  CHECK(token_issuer(key.sign(R"({"sub":"x"})")) == "");
  CHECK_FALSE(token_issuer("garbage").has_value());
  CHECK_FALSE(token_issuer("a.b.c").has_value());
}
