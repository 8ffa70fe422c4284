#include "dorm/runtime/object_id.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

#include "dorm/hex.hpp"

namespace dorm {
namespace {

// HMAC-SHA256(secret, domain || 0 || ns || 0 || data).
std::array<std::uint8_t, 32> keyed_hash(const std::string& secret, std::string_view domain,
                                        std::string_view ns, std::string_view data) {
  std::string input;
  input.reserve(domain.size() + ns.size() + data.size() + 2);
  input.append(domain).push_back('\0');
  input.append(ns).push_back('\0');
  input.append(data);
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data(), &len);
  return out;
}

}  // namespace

std::string ObjectId::to_string() const { return hex_encode(body_) + hex_encode(mac_); }

Result<IdCodec> IdCodec::create(std::string_view secret) {
  if (secret.size() != kSecretBytes) {
    return Error{ErrorCode::invalid_argument, "id secret must be " + std::to_string(kSecretBytes) +
                                                  " bytes, got " + std::to_string(secret.size())};
  }
  return IdCodec(std::string(secret));
}

std::array<std::uint8_t, ObjectId::kMacBytes> IdCodec::mac(std::string_view ns,
                                                           const std::uint8_t* body) const {
  auto full = keyed_hash(secret_, "dorm-id-mac", ns,
                         {reinterpret_cast<const char*>(body), ObjectId::kBodyBytes});
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
  auto h = keyed_hash(secret_, "dorm-id-name", ns, name);
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
  auto key = keyed_hash(secret_, "dorm-derived-key", purpose, {});
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
