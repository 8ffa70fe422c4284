// ObjectCache — one activation's memory of its own committed keys.
//
// A durable object is the only writer of the keys under its prefix: one activation per id
// at a time, a dead activation's storage handle is fenced, and every write of the object
// is a batch it commits itself. So what the activation once read stays true until it
// writes that key again, and each of its writes passes through here when its turn commits
// (apply). The cache then answers, without the backend:
//   - a point read of a key it has seen (read, written, or listed), present or absent;
//   - a point read of any key inside a complete range (absent unless it holds the key);
//   - a listing whose range lies inside one complete range.
// A range becomes complete when a backend scan has returned everything in it (a listing
// without a limit, or the part of a limited one up to its last row), when delete_all
// emptied it, and, for the whole object, when the first read of the activation found at
// most kPrefetchEntries keys (a new or small object is then fully known after one scan).
//
// It holds committed state only: entries come from backend reads, which see committed
// state, and from batches the backend acknowledged. A commit that failed (nothing
// applied, or applied and reported failed: the outcome is unknown) clears it. The turn's
// own uncommitted writes live above it, in TurnBatch.
//
// Bounded: at most `max_bytes` of keys, values and bookkeeping (kSlotBytes per entry,
// kRangeBytes per range: estimates of the node and allocator overhead). Over it, the
// least recently used entries go until an eighth of the bound is free (one sort per
// eviction round, not a list node per entry), and with each present one the complete
// range it lay in (absent keys of that range could no longer be told from forgotten
// ones), so reads fall back to the store. max_bytes 0 turns it off: every read goes to
// the backend.
//
// Keys outside the object's prefix (index entries) are never cached: other objects write
// those. Neither are keys under the uncached prefixes the owner names (data written once
// and rarely read, NamespaceOptions::uncached_prefixes): a complete range says nothing
// about them, so reads and listings that reach one go to the backend. Single-threaded,
// like the activation that owns it.
#pragma once

#include <boost/intrusive/set.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/write_batch.hpp"

namespace dorm {

// The key prefixes a cache leaves to the store (NamespaceOptions::uncached_prefixes, as keys
// relative to the object's prefix), each with the end of its range, worked out once per
// namespace rather than at every listing. Immutable; shared by every object of a namespace.
class UncachedPrefixes {
 public:
  UncachedPrefixes() = default;
  explicit UncachedPrefixes(std::vector<std::string> prefixes);

  // Whether `key` lies under one of them.
  bool holds(std::string_view key) const;
  // Whether [lower, upper) (upper nullopt: to the end) overlaps one of them.
  bool reached_by(const std::string& lower, const std::optional<std::string>& upper) const;

 private:
  struct Range {
    std::string prefix;
    std::optional<std::string> end;  // the prefix's successor; nullopt: all 0xff, no end
  };
  std::vector<Range> ranges_;
};

class ObjectCache {
 public:
  // Bookkeeping estimates per entry and per range (an entry is one allocation: its tree
  // links, LRU stamp and sizes, then the key and the value; a range is a std::map node with
  // two keys), counted with the bytes of the keys and values, malloc's header included.
  static constexpr std::size_t kSlotBytes = 56;
  static constexpr std::size_t kRangeBytes = 96;
  // The first read of an activation lists this many of the object's keys at most: an
  // object with fewer is then known whole (negative lookups included) after one scan,
  // and a larger one pays one short scan once.
  static constexpr std::size_t kPrefetchEntries = 16;

  // Caches the keys beginning with `root` (every key when empty) of `backend`, except those
  // beginning with root + one of `uncached` (which must outlive the cache; null: none).
  // Every resident object that has read anything holds one, so it is one allocation with
  // the root inside it (docs/benchmarks.md, resident memory per idle object).
  static std::unique_ptr<ObjectCache> make(storage::Backend& backend, std::string_view root,
                                           std::size_t max_bytes,
                                           const UncachedPrefixes* uncached = nullptr);
  ~ObjectCache();
  ObjectCache(const ObjectCache&) = delete;
  ObjectCache& operator=(const ObjectCache&) = delete;
  // Made by make() only: the root lives past the end of the object.
  static void operator delete(void* p) { ::operator delete(p); }

  // As Backend::get and Backend::scan, answered from memory where the cache can.
  Result<std::optional<std::string>> get(const std::string& key);
  Result<std::vector<storage::KeyValue>> scan(const storage::ScanOptions& options);

  // Whether the store is known, from memory alone, not to hold `key`.
  bool known_absent(std::string_view key) const;

  // `batch` committed: its writes to the object's keys are now what the store holds.
  void apply(const storage::WriteBatch& batch);
  // Forgets everything (the store may hold something the cache cannot know).
  void clear();

  std::size_t bytes() const { return bytes_; }
  std::size_t entries() const { return count_; }

 private:
  friend struct ObjectCacheTesting;  // tests/runtime/storage_cache_test.cpp: the LRU clock

  // Keys below are relative to root(). A range end of nullopt is the end of the object.
  using End = std::optional<std::string>;
  using Hook = boost::intrusive::set_member_hook<boost::intrusive::optimize_size<true>>;
  // One cached key: a present value or "known absent". One allocation: the header, then
  // the key's bytes, then the value's.
  struct Entry {
    static constexpr std::uint32_t kAbsent = 0xffffffff;
    Hook hook;
    std::uint32_t used;  // when last read or written (LRU stamp)
    std::uint32_t key_size;
    std::uint32_t value_size;  // kAbsent: known absent
    char bytes[];

    std::string_view key() const { return {bytes, key_size}; }
    bool present() const { return value_size != kAbsent; }
    std::string_view value() const { return {bytes + key_size, present() ? value_size : 0}; }
    // What an entry counts against max_bytes.
    static std::size_t cost_of(std::size_t key_bytes, std::size_t value_bytes) {
      return kSlotBytes + key_bytes + value_bytes;
    }
    std::size_t cost() const { return cost_of(key_size, present() ? value_size : 0); }
    // One allocation holding the header, the key and the value (nullopt: known absent).
    static Entry* create(std::string_view key, std::optional<std::string_view> value);
    static void destroy(Entry* entry);
  };
  struct EntryLess {
    bool operator()(const Entry& a, const Entry& b) const { return a.key() < b.key(); }
    bool operator()(std::string_view a, const Entry& b) const { return a < b.key(); }
    bool operator()(const Entry& a, std::string_view b) const { return a.key() < b; }
  };
  using Slots = boost::intrusive::set<
      Entry, boost::intrusive::member_hook<Entry, Hook, &Entry::hook>,
      boost::intrusive::compare<EntryLess>, boost::intrusive::constant_time_size<false>>;
  using Ranges = std::map<std::string, End, std::less<>>;  // disjoint ranges [begin, end)

  ObjectCache(storage::Backend& backend, std::size_t root_size, std::size_t max_bytes,
              const UncachedPrefixes* uncached);

  std::string_view root() const { return {root_bytes_, root_size_}; }
  bool enabled() const { return max_bytes_ > 0; }
  // The relative form of `key`, if it is one of the object's keys.
  std::optional<std::string> relative(std::string_view key) const;
  // The relative [lower, upper) of a scan, if it lies inside the object's keys.
  bool relative_bounds(const storage::ScanOptions::Bounds& bounds, std::string& lower,
                       End& upper) const;
  // Whether a relative key lies under an uncached prefix; whether [lower, upper) reaches one.
  bool uncached(std::string_view key) const;
  bool reaches_uncached(const std::string& lower, const End& upper) const;
  Result<void> prefetch();
  std::vector<storage::KeyValue> from_memory(const storage::ScanOptions& options,
                                             const std::string& lower, const End& upper);
  void learn_scan(const storage::ScanOptions& options, const std::vector<storage::KeyValue>& rows,
                  const std::string& lower, const End& upper);
  void apply_range_delete(std::string_view begin, std::string_view end);

  void remember(std::string_view key, std::optional<std::string_view> value);
  Slots::iterator erase_slot(Slots::iterator it);
  void touch(Entry& entry);
  // Every entry, least recently used first.
  std::vector<Entry*> by_age();
  void trim();

  // ---- complete ranges (whole_: the object itself, without a node) ----
  bool in_complete(std::string_view key) const;
  bool covered(const std::string& lower, const End& upper) const;
  void add_complete(std::string lower, End upper);
  // Drops the complete range holding `key`, if any.
  void drop_complete_at(std::string_view key);
  void drop_all_complete();

  storage::Backend& backend_;
  const UncachedPrefixes* uncached_;  // relative to root()
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::uint32_t clock_ = 0;  // stamps Entry::used
  std::uint32_t count_ = 0;  // entries in slots_
  std::uint32_t root_size_;
  bool prefetched_ = false;
  bool whole_ = false;  // every key of the object is known
  Slots slots_;
  std::unique_ptr<Ranges> complete_;  // when not whole_; made at the first range
  char root_bytes_[];                 // root_size_ bytes, allocated with the object
};

}  // namespace dorm
