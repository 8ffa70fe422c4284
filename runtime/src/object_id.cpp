#include "dorm/runtime/object_id.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstring>
#include <new>
#include <stdexcept>

#include "dorm/hex.hpp"

namespace dorm {

// The MAC context is keyed once, when the codec is made; each hash works on a copy of it.
// OpenSSL 3's one-shot HMAC() looks up the algorithm and sets up and keys a fresh context
// on every call, which cost ~1.1 us against ~0.5 us for a copy (and every MCP request
// hashes its session id twice: id_from_name's body and its MAC).
struct IdCodec::KeyedHash {
  EVP_MAC* algorithm = nullptr;
  EVP_MAC_CTX* keyed = nullptr;

  KeyedHash() = default;
  KeyedHash(const KeyedHash&) = delete;
  KeyedHash& operator=(const KeyedHash&) = delete;
  ~KeyedHash() {
    EVP_MAC_CTX_free(keyed);
    EVP_MAC_free(algorithm);
  }

  // HMAC-SHA256(secret, domain || 0 || ns || 0 || data). Copying a context only reads the
  // original, so threads may hash at once.
  std::array<std::uint8_t, 32> operator()(std::string_view domain, std::string_view ns,
                                          std::string_view data) const {
    std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_dup(keyed),
                                                                  &EVP_MAC_CTX_free);
    if (!ctx) throw std::bad_alloc();
    const unsigned char zero = 0;
    auto update = [&](std::string_view part) {
      return EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                            part.size()) == 1;
    };
    std::array<std::uint8_t, 32> out{};
    std::size_t len = 0;
    if (!update(domain) || EVP_MAC_update(ctx.get(), &zero, 1) != 1 || !update(ns) ||
        EVP_MAC_update(ctx.get(), &zero, 1) != 1 || !update(data) ||
        EVP_MAC_final(ctx.get(), out.data(), &len, out.size()) != 1 || len != out.size()) {
      throw std::runtime_error("HMAC-SHA256 failed");
    }
    return out;
  }
};

std::string ObjectId::to_string() const { return hex_encode(body_) + hex_encode(mac_); }

Result<IdCodec> IdCodec::create(std::string_view secret) {
  if (secret.size() != kSecretBytes) {
    return Error{ErrorCode::invalid_argument, "id secret must be " + std::to_string(kSecretBytes) +
                                                  " bytes, got " + std::to_string(secret.size())};
  }
  auto hash = std::make_shared<KeyedHash>();
  hash->algorithm = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (hash->algorithm) hash->keyed = EVP_MAC_CTX_new(hash->algorithm);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  if (!hash->keyed ||
      EVP_MAC_init(hash->keyed, reinterpret_cast<const unsigned char*>(secret.data()),
                   secret.size(), params) != 1) {
    return Error{ErrorCode::internal, "OpenSSL could not set up HMAC-SHA256 for object ids"};
  }
  return IdCodec(std::move(hash));
}

std::array<std::uint8_t, ObjectId::kMacBytes> IdCodec::mac(std::string_view ns,
                                                           const std::uint8_t* body) const {
  auto full =
      (*hash_)("dorm-id-mac", ns, {reinterpret_cast<const char*>(body), ObjectId::kBodyBytes});
  std::array<std::uint8_t, ObjectId::kMacBytes> out{};
  std::memcpy(out.data(), full.data(), out.size());
  return out;
}

ObjectId IdCodec::from_body(std::string_view ns, std::string_view body) const {
  ObjectId id;
  id.ns_ = std::string(ns);
  std::memcpy(id.body_.data(), body.data(), std::min(body.size(), id.body_.size()));
  id.mac_ = mac(ns, id.body_.data());
  return id;
}

ObjectId IdCodec::from_name(std::string_view ns, std::string_view name) const {
  auto h = (*hash_)("dorm-id-name", ns, name);
  return from_body(ns, {reinterpret_cast<const char*>(h.data()), ObjectId::kBodyBytes});
}

Result<ObjectId> IdCodec::new_unique(std::string_view ns) const {
  std::array<std::uint8_t, ObjectId::kBodyBytes> body{};
  if (RAND_bytes(body.data(), static_cast<int>(body.size())) != 1) {
    return Error{ErrorCode::internal, "RAND_bytes failed to produce an object id"};
  }
  return from_body(ns, {reinterpret_cast<const char*>(body.data()), body.size()});
}

std::string IdCodec::derive_key(std::string_view purpose) const {
  auto key = (*hash_)("dorm-derived-key", purpose, {});
  return std::string(reinterpret_cast<const char*>(key.data()), key.size());
}

Result<ObjectId> IdCodec::parse(std::string_view ns, std::string_view text) const {
  if (text.size() != ObjectId::kTextLength) {
    return Error{ErrorCode::invalid_argument,
                 "malformed object id: expected " + std::to_string(ObjectId::kTextLength) +
                     " hex digits, got " + std::to_string(text.size()) + " characters"};
  }
  std::array<std::uint8_t, ObjectId::kBodyBytes + ObjectId::kMacBytes> raw{};
  if (!hex_decode(text, raw)) {  // upper case is not accepted: one spelling per id
    return Error{ErrorCode::invalid_argument,
                 "malformed object id: only lower-case hex digits are allowed"};
  }
  auto expected = mac(ns, raw.data());
  if (CRYPTO_memcmp(expected.data(), raw.data() + ObjectId::kBodyBytes, expected.size()) != 0) {
    return Error{ErrorCode::invalid_argument,
                 "object id is not valid in namespace '" + std::string(ns) + "'"};
  }
  ObjectId id;
  id.ns_ = std::string(ns);
  std::memcpy(id.body_.data(), raw.data(), ObjectId::kBodyBytes);
  id.mac_ = expected;
  return id;
}

}  // namespace dorm
