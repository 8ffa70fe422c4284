// ObjectStorage — the storage side of one activation: what DurableObject's storage, alarm
// and index calls write, and the one atomic commit that ends a turn.
//
// Every write goes into the turn's TurnBatch (reads see it first); nothing reaches the
// backend before commit(). Beneath the batch, the activation's ObjectCache answers reads
// of the object's own keys from memory where it can; a commit that succeeds is applied to
// it, one that fails clears it (object_cache.hpp). Both exist only when needed: the batch
// (with the rest of the turn's state, TurnScratch) is lent from a per-thread pool from the
// turn's first storage call until commit() or discard(), and the cache is made at the
// object's first read; so a resident idle object holds neither batch nor, if it never
// read anything, a cache (docs/benchmarks.md, resident memory). The object's keys live under its own prefix (keys.hpp); an alarm
// is two records written together, the object's record and its entry in the alarm index,
// so one commit covers both. Limits (StorageLimits) are checked here with one rule
// (docs/architecture.md#errors): one key or value over its limit is the caller's input —
// refused with a clear error, nothing written, the turn goes on; a batch over its totals,
// or a failed read behind a write, cannot commit as a whole, so it becomes the turn's
// failure() and the host discards the turn.
//
// ObjectHost owns one and adds what is not storage: the rule that storage is used only
// inside a turn, and the output gate (nothing is released before commit() succeeds).
// Single-threaded, like the actor that owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "alarm_records.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/durable_object.hpp"
#include "dorm/runtime/epoch.hpp"
#include "dorm/runtime/object_id.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/runtime/keys.hpp"
#include "object_cache.hpp"
#include "turn_scratch.hpp"

namespace dorm::detail {

// What every object of a namespace shares, held once per namespace (a resident object
// keeps one pointer to it rather than a copy of each field).
struct ObjectSettings {
  Runtime::Impl* runtime;  // null where a test drives an ObjectStorage alone
  storage::Backend& backend;
  const StorageLimits& limits;
  std::size_t cache_bytes;  // the bound of each object's cache (0: none, reads go to backend)
  // The cache's uncached prefixes, relative to the object's prefix (null: none).
  const UncachedPrefixes* uncached = nullptr;
  std::chrono::milliseconds idle_timeout{0};  // the runtime's idle eviction (0: off)
};

class ObjectStorage {
 public:
  // `settings` and `id` must outlive this (the host passes its namespace's and its
  // Activation's).
  ObjectStorage(const ObjectSettings& settings, const ObjectId& id, Epoch epoch);
  ~ObjectStorage();
  ObjectStorage(const ObjectStorage&) = delete;
  ObjectStorage& operator=(const ObjectStorage&) = delete;

  // ---- the object's own keys (relative to its prefix) ----
  Result<std::optional<std::string>> get(std::string_view key);
  Result<std::vector<std::optional<std::string>>> get_many(std::span<const std::string> keys);
  Result<void> put(std::string_view key, std::string_view value);
  // Whether the key existed.
  Result<bool> del(std::string_view key);
  Result<std::vector<storage::KeyValue>> list(const ListOptions& options);
  // Everything under the object's prefix, alarms (and their index entries) included.
  Result<void> delete_all();

  // ---- alarms ----
  // A new version each time; the record and its index entry go in the same batch.
  Result<void> set_alarm(std::string_view name, std::int64_t due_ms);
  Result<std::optional<std::int64_t>> get_alarm(std::string_view name);
  Result<bool> delete_alarm(std::string_view name);
  // The stored record (due time and version); errors: corruption for a malformed one.
  Result<std::optional<AlarmRecord>> read_alarm(std::string_view name);
  // Deletes `record` (as read_alarm returned it) and its index entry.
  void remove_alarm(std::string_view name, const AlarmRecord& record);

  // ---- runtime indexes (names checked: 1-64 of [a-z0-9._-], not "dorm.*") ----
  Result<void> index_put(std::string_view index, std::string_view key, std::string_view value);
  Result<void> index_del(std::string_view index, std::string_view key);

  // ---- the turn ----
  // A turn runs from its first storage call to commit() or discard(), which end it.
  // begin_turn() makes sure nothing of an earlier turn is left (each ends with one of them).
  void begin_turn() { end_turn(); }
  // Why the current turn may not commit, if it may not.
  const std::optional<Error>& failure() const;
  // Writes the turn's batch in one atomic commit (nothing to write: nothing done) and
  // ends the turn, whatever the outcome. Must not be called while failure() is set.
  Result<void> commit();
  // Drops the turn's writes and ends it (a failed turn).
  void discard();
  // Frees the cache (the activation ends).
  void drop_cache() { cache_.reset(); }
  // What the cache holds, in its own count of bytes (0 before the first read), and
  // whether there is one yet.
  std::size_t cache_bytes() const { return cache_ ? cache_->bytes() : 0; }
  bool has_cache() const { return static_cast<bool>(cache_); }
  // Records `error` as the turn's failure (the first one wins) and returns it.
  Result<void> fail_turn(Error error);
  // The alarm index changes made since the last call (or discard()), in batch order: after
  // a commit, what the scheduler must be told about.
  std::vector<AlarmIndexChange> take_alarm_changes();
  // The activation's epoch (alarm versions carry it).
  Epoch epoch() const { return epoch_; }
  const ObjectSettings& settings() const { return settings_; }
  // Scale-out: the activation holds its object's lease `token`; from now on every commit is
  // checked against it (Backend::commit_leased), and the epoch's generation is `generation`.
  // Called before the activation's first turn.
  void hold_lease(std::uint64_t token, std::uint64_t generation) {
    lease_token_ = token;
    epoch_.generation = generation;
  }

 private:
  Result<void> check_write(std::size_t key_bytes, std::size_t value_bytes);
  Result<void> check_index(std::string_view index);
  // The turn's state, taken from the pool at the turn's first storage call.
  TurnScratch& turn();
  // The turn's batch, bound to the cache for reading (made at the first read), or for
  // writing (bound to the cache if there is one).
  TurnBatch& reading();
  TurnBatch& writing();
  void end_turn();
  // This object's key prefix, and where its user data lives (root + 'd').
  std::string root() const { return keys::object_prefix(id_.ns(), id_.body()); }
  std::string data_prefix() const { return root() + keys::kObjectData; }
  std::string full_key(std::string_view key) const { return data_prefix().append(key); }
  std::string alarm_key(std::string_view name) const;
  std::string alarm_index_key(std::string_view name, std::int64_t due_ms) const;

  const ObjectSettings& settings_;
  const ObjectId& id_;
  Epoch epoch_;
  std::unique_ptr<ObjectCache> cache_;  // the committed state of the keys under root()
  std::unique_ptr<TurnScratch> turn_;   // during a turn only
  std::uint64_t lease_token_ = 0;  // 0: the runtime is not a scale-out node
};

}  // namespace dorm::detail
