// Object ids: what names one durable object within a namespace.
//
// An id is a 16-byte body plus a 16-byte MAC over (namespace, body) keyed by the
// runtime's secret, printed as 64 lower-case hex digits. The MAC makes ids unforgeable and
// binds each to its namespace: a made-up id, a truncated one, or one minted for another
// namespace is rejected when parsed. Bodies come from id_from_name (a keyed hash of the
// name: the same name always gives the same id under the same secret) or new_unique_id
// (random, from RAND_bytes).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm {

class ObjectId {
 public:
  static constexpr std::size_t kBodyBytes = 16;
  static constexpr std::size_t kMacBytes = 16;
  static constexpr std::size_t kTextLength = 2 * (kBodyBytes + kMacBytes);

  ObjectId() = default;

  const std::string& ns() const { return ns_; }
  // The raw body: the part storage keys are built from.
  std::string_view body() const {
    return {reinterpret_cast<const char*>(body_.data()), body_.size()};
  }
  // 64 hex digits: body then MAC.
  std::string to_string() const;

  friend bool operator==(const ObjectId& a, const ObjectId& b) {
    return a.ns_ == b.ns_ && a.body_ == b.body_;
  }
  friend bool operator<(const ObjectId& a, const ObjectId& b) {
    return a.ns_ != b.ns_ ? a.ns_ < b.ns_ : a.body_ < b.body_;
  }

 private:
  friend class IdCodec;
  std::string ns_;
  std::array<std::uint8_t, kBodyBytes> body_{};
  std::array<std::uint8_t, kMacBytes> mac_{};
};

// Mints and checks ids under one secret. Thread-safe (immutable after construction).
class IdCodec {
 public:
  static constexpr std::size_t kSecretBytes = 32;

  // Errors: invalid_argument if the secret is not kSecretBytes long.
  static Result<IdCodec> create(std::string_view secret);

  ObjectId from_name(std::string_view ns, std::string_view name) const;
  // Errors: internal if the system's random source fails.
  Result<ObjectId> new_unique(std::string_view ns) const;
  // Errors: invalid_argument, with the same message for a forged id as for one from
  // another namespace (the MAC cannot tell them apart, and the caller learns nothing).
  Result<ObjectId> parse(std::string_view ns, std::string_view text) const;
  // The id with this raw body (e.g. read back from a storage key), MAC recomputed.
  ObjectId from_body(std::string_view ns, std::string_view body) const;
  // A 32-byte key for `purpose`, derived from the secret (HMAC-SHA256 under its own
  // domain, so no id MAC and no other purpose's key can be computed from it).
  std::string derive_key(std::string_view purpose) const;

 private:
  struct KeyedHash;  // HMAC-SHA256 keyed with the secret once; copies share it
  explicit IdCodec(std::shared_ptr<const KeyedHash> hash) : hash_(std::move(hash)) {}
  std::array<std::uint8_t, ObjectId::kMacBytes> mac(std::string_view ns,
                                                    const std::uint8_t* body) const;
  std::shared_ptr<const KeyedHash> hash_;
};

}  // namespace dorm
