// Directory — which activation, if any, each id has in this runtime.
//
// Every message to an object looks its id up here (Runtime::Impl::admit), so this lookup
// is on the path of every turn, from every thread. The directory is split into kShards
// shards by the id's hash, each with its own lock and its own open-addressing table: a
// message takes only its id's shard lock, so senders to different objects seldom wait for
// each other, and a lookup reads one slot array (each slot keeps the hash, so a probe
// compares ids only where the hash matches) instead of walking a tree of cache misses.
//
// One activation per id: an id's entry is created, found, marked stopping and removed only
// under its shard's lock, and a new activation is spawned under that same lock, so two
// senders of one id always agree on its activation. What the runtime remembers about ids
// that are not active (reset ones, evicted ones) is per shard too, under the same lock.
//
// With a resident budget, the runtime also keeps every activation in one least recently
// used order (Lru, links inside each Activation) and every directory operation first takes
// one runtime-wide lock (Runtime::Impl::wide_mutex): choosing victims looks at activations
// of every shard at once. Without a budget there is no order to keep and no wide lock.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dorm/runtime/durable_object.hpp"
#include "dorm/runtime/object_id.hpp"
#include "envelope.hpp"
#include "id_hash_set.hpp"

namespace dorm::detail {

// One live activation as the directory knows it. Held by the directory, the host actor
// (until it exits) and any Lease of it, through ActivationRef (counted in `refs`).
struct Activation {
  Activation(ObjectId i, std::uint64_t h) : id(std::move(i)), hash(h) {}

  // What every message to it reads comes first, next to the id a lookup compares, so a
  // message touches as few of its cache lines as it can.
  caf::actor actor;
  // Messages accepted for it and not yet finished. Raised only under the shard lock, so
  // "zero under the lock" means no message is on its way to this activation.
  std::atomic<std::uint32_t> accepted{0};
  std::atomic<std::uint32_t> leases{0};  // keep_alive() leases held
  bool stopping = false;  // guarded by the shard lock: new messages are parked, not sent
  mutable std::atomic<std::uint32_t> refs{0};  // ActivationRefs to it
  const ObjectId id;      // the runtime's one copy of the id: host and storage refer to it
  const std::uint64_t hash;  // Directory::hash(id)
  // Guarded by the shard lock: messages for the next activation, in arrival order (made
  // only when one is parked).
  std::unique_ptr<std::vector<Envelope>> parked;
  // Guarded by the wide lock (resident budget only): the LRU order.
  Activation* lru_prev = nullptr;
  Activation* lru_next = nullptr;
};

// Open addressing with linear probing, keyed by (hash, id); deletion shifts entries back,
// so there are no tombstones. Not thread-safe: its shard's lock guards it.
//
// A slot is one word: the activation's address with 16 bits of its hash in the address's
// unused top bits (user-space addresses on Linux's x86-64 and arm64 fit in 48 bits), so a
// probe passes over other ids without reading their activations, and 100,000 resident
// objects cost 8 bytes per slot rather than 24 (docs/benchmarks.md, resident memory). An
// address that does not fit turns tagging off for the table: probes then compare hashes
// in the activations.
class ActivationTable {
 public:
  ActivationTable() = default;
  // `tag_addresses` false: never tag (what a table does after meeting a wide address).
  explicit ActivationTable(bool tag_addresses) : tagged_(tag_addresses) {}
  ActivationTable(const ActivationTable&) = delete;
  ActivationTable& operator=(const ActivationTable&) = delete;
  ~ActivationTable() { clear(); }

  Activation* find(std::uint64_t hash, const ObjectId& id) const;
  // `act`'s id must not be in the table. The table holds a reference to it.
  void insert(ActivationRef act);
  // Removes `act` if it is the entry of its id; returns whether it was.
  bool erase(const Activation* act);
  std::size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (auto slot : slots_) {
      if (slot) f(address(slot));
    }
  }
  void clear();

 private:
  static constexpr unsigned kTagShift = 48;
  static constexpr std::uintptr_t kAddressMask = (std::uintptr_t{1} << kTagShift) - 1;
  std::uintptr_t tag(std::uint64_t hash) const {
    return tagged_ ? static_cast<std::uintptr_t>((hash >> 32) & 0xffff) << kTagShift : 0;
  }
  Activation* address(std::uintptr_t slot) const {
    return reinterpret_cast<Activation*>(tagged_ ? slot & kAddressMask : slot);
  }
  std::size_t home(std::uint64_t hash) const { return hash & (slots_.size() - 1); }
  void place(Activation* act);  // no reference taken, no growth
  void grow();
  void untag();

  std::vector<std::uintptr_t> slots_;  // 0: empty
  std::size_t size_ = 0;
  bool tagged_ = true;
};

// Activations in least recently used order (budget only); links live in Activation.
class Lru {
 public:
  void push_front(Activation* act);
  void move_to_front(Activation* act);
  void erase(Activation* act);
  Activation* oldest() const { return tail_; }

 private:
  Activation* head_ = nullptr;
  Activation* tail_ = nullptr;
};

class Directory {
 public:
  static constexpr std::size_t kShards = 64;

  // What one shard holds; `mutex` guards the rest.
  struct alignas(64) Shard {
    std::mutex mutex;
    ActivationTable live;
    // Ids whose last activation was reset (consumed by the next activation), and hashes of
    // ids this runtime evicted (their next activation is a wake).
    std::map<ObjectId, StartReason> next_start;
    IdHashSet evicted;
  };

  // The id's hash: the body's first bytes mixed with the namespace (bodies are keyed hashes
  // or random, so their bits are uniform).
  static std::uint64_t hash(const ObjectId& id);
  Shard& shard(std::uint64_t hash) { return shards_[hash >> 58]; }
  template <class F>
  void for_each_shard(F&& f) {
    for (auto& s : shards_) f(s);
  }

 private:
  static_assert(kShards == 64, "shard() takes the hash's top 6 bits");
  Shard shards_[kShards];
};

}  // namespace dorm::detail
