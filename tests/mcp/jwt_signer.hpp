// Test keys and tokens: an authorization server in miniature. Keys are generated with
// OpenSSL for each test run; tokens are signed with them exactly as an AS signs (JWS
// compact serialization, ES256 signatures as r||s).
#pragma once

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "dorm/mcp/access_token.hpp"

namespace dorm::mcp::testkit {

class TestKey {
 public:
  // alg: "RS256" (2048-bit RSA), "ES256" (P-256) or "EdDSA" (Ed25519).
  TestKey(std::string alg, std::string kid) : alg_(std::move(alg)), kid_(std::move(kid)) {
    EVP_PKEY* key = alg_ == "RS256"   ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048))
                    : alg_ == "ES256" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                                      : EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (key == nullptr) throw std::runtime_error("keygen failed");
    key_.reset(key, EVP_PKEY_free);
  }

  const std::string& alg() const { return alg_; }
  const std::string& kid() const { return kid_; }

  // The public JWK (no "alg" member unless `with_alg`).
  std::string jwk(bool with_alg = false) const {
    std::string out = "{\"kid\":\"" + kid_ + "\",\"use\":\"sig\"";
    if (with_alg) out += ",\"alg\":\"" + alg_ + "\"";
    if (alg_ == "RS256") {
      out += ",\"kty\":\"RSA\",\"n\":\"" + b64(bn_param(OSSL_PKEY_PARAM_RSA_N)) + "\",\"e\":\"" +
             b64(bn_param(OSSL_PKEY_PARAM_RSA_E)) + "\"";
    } else if (alg_ == "ES256") {
      unsigned char point[65];
      size_t length = 0;
      EVP_PKEY_set_utf8_string_param(key_.get(), OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed");
      EVP_PKEY_get_octet_string_param(key_.get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &length);
      std::string raw(reinterpret_cast<char*>(point), length);
      out += ",\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" + b64(raw.substr(1, 32)) + "\",\"y\":\"" +
             b64(raw.substr(33, 32)) + "\"";
    } else {
      unsigned char raw[32];
      size_t length = sizeof raw;
      EVP_PKEY_get_raw_public_key(key_.get(), raw, &length);
      out += ",\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"" +
             b64(std::string(reinterpret_cast<char*>(raw), length)) + "\"";
    }
    return out + "}";
  }

  // A compact JWS of `claims` (JSON text) with this key; `header` overrides the header.
  std::string sign(const std::string& claims, const std::string& header = "") const {
    std::string h = header.empty() ? "{\"alg\":\"" + alg_ + "\",\"typ\":\"at+jwt\",\"kid\":\"" + kid_ + "\"}" : header;
    std::string input = b64(h) + "." + b64(claims);
    return input + "." + b64(signature(input));
  }

  std::string signature(const std::string& input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const EVP_MD* md = alg_ == "EdDSA" ? nullptr : EVP_sha256();
    size_t length = 0;
    EVP_DigestSignInit(ctx, nullptr, md, nullptr, key_.get());
    EVP_DigestSign(ctx, nullptr, &length, reinterpret_cast<const unsigned char*>(input.data()), input.size());
    std::string sig(length, '\0');
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &length,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    EVP_MD_CTX_free(ctx);
    sig.resize(length);
    if (alg_ != "ES256") return sig;
    // DER → r||s, as JWS wants it.
    const auto* der = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* parsed = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(sig.size()));
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(parsed), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(parsed), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(parsed);
    return raw;
  }

  static std::string b64(const std::string& bytes) { return base64url_encode(bytes); }

 private:
  std::string bn_param(const char* name) const {
    BIGNUM* bn = nullptr;
    EVP_PKEY_get_bn_param(key_.get(), name, &bn);
    std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(bn);
    return out;
  }

  std::string alg_;
  std::string kid_;
  std::shared_ptr<EVP_PKEY> key_;
};

inline std::string jwks_of(std::initializer_list<const TestKey*> keys) {
  std::string out = "{\"keys\":[";
  bool first = true;
  for (const auto* k : keys) {
    out += (first ? "" : ",") + k->jwk();
    first = false;
  }
  return out + "]}";
}

}  // namespace dorm::mcp::testkit
