// TokenMemo — what was learnt about bearer tokens, remembered by each token's SHA-256
// (never the token itself) until a time the caller sets, least recently used dropped
// first when full. OAuthResource keeps the tokens whose signature verified in one, the
// introspection client the authorization server's answers in another. Thread-safe.
#pragma once

#include <openssl/sha.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace dorm::mcp::detail {

using TokenDigest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

inline TokenDigest token_digest(std::string_view token) {
  TokenDigest d;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
  return d;
}

template <typename Value>
class TokenMemo {
 public:
  // capacity 0 remembers nothing.
  explicit TokenMemo(std::size_t capacity) : capacity_(capacity) {}

  // The value put for `digest`, unless `now_s` is at or past its `until` (then it is
  // dropped). A hit becomes the most recently used.
  std::optional<Value> find(const TokenDigest& digest, std::int64_t now_s) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(digest);
    if (it == index_.end()) return std::nullopt;
    if (now_s >= it->second->until) {
      order_.erase(it->second);
      index_.erase(it);
      return std::nullopt;
    }
    order_.splice(order_.begin(), order_, it->second);
    return it->second->value;
  }

  // Remembers `value` for `digest` until `until` (seconds since the epoch), replacing
  // what was there.
  void put(const TokenDigest& digest, Value value, std::int64_t until) {
    if (capacity_ == 0) return;
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(digest); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
    order_.push_front(Slot{digest, std::move(value), until});
    index_.emplace(digest, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().digest);
      order_.pop_back();
    }
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return order_.size();
  }

 private:
  struct Slot {
    TokenDigest digest;
    Value value;
    std::int64_t until;
  };
  struct Hash {
    std::size_t operator()(const TokenDigest& d) const {
      std::size_t h;
      std::memcpy(&h, d.data(), sizeof h);  // uniform already: it is a SHA-256
      return h;
    }
  };
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Slot> order_;
  std::unordered_map<TokenDigest, typename std::list<Slot>::iterator, Hash> index_;
};

}  // namespace dorm::mcp::detail
