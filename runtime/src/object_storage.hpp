// ObjectStorage — the storage side of one activation: what DurableObject's storage, alarm
// and index calls write, and the one atomic commit that ends a turn.
//
// Every write goes into the turn's TurnBatch (reads see it first); nothing reaches the
// backend before commit(). Beneath the batch, the activation's ObjectCache answers reads
// of the object's own keys from memory where it can; a commit that succeeds is applied to
// it, one that fails clears it (object_cache.hpp). The object's keys live under its own prefix (keys.hpp); an alarm
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

#include <cstdint>
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
#include "object_cache.hpp"
#include "turn_batch.hpp"

namespace dorm::detail {

class ObjectStorage {
 public:
  // `cache_bytes`: the bound of the object's cache (0: none, every read goes to `backend`).
  ObjectStorage(storage::Backend& backend, const StorageLimits& limits, const ObjectId& id,
                Epoch epoch, std::size_t cache_bytes);
  // Its cache refers to its key prefix: never copied.
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
  // Starts a turn: forgets the last one's failure. (Its writes are gone already: each
  // turn ends with commit() or discard().)
  void begin_turn() { failure_.reset(); }
  // Why the current turn may not commit, if it may not.
  const std::optional<Error>& failure() const { return failure_; }
  // Writes the turn's batch in one atomic commit (nothing to write: nothing done) and
  // empties it, whatever the outcome. Must not be called while failure() is set.
  Result<void> commit();
  // Drops the turn's writes (a failed turn).
  void discard();
  // Frees the cache (the activation ends).
  void drop_cache() { cache_.clear(); }
  const ObjectCache& cache() const { return cache_; }
  // Records `error` as the turn's failure (the first one wins) and returns it.
  Result<void> fail_turn(Error error);
  // The alarm index changes made since the last call (or discard()), in batch order: after
  // a commit, what the scheduler must be told about.
  std::vector<AlarmIndexChange> take_alarm_changes() { return std::exchange(alarm_changes_, {}); }

 private:
  Result<void> check_write(std::size_t key_bytes, std::size_t value_bytes);
  Result<void> check_index(std::string_view index);
  std::string full_key(std::string_view key) const { return prefix_ + std::string(key); }
  std::string alarm_key(std::string_view name) const;
  std::string alarm_index_key(std::string_view name, std::int64_t due_ms) const;

  storage::Backend& backend_;
  const StorageLimits& limits_;
  ObjectId id_;
  Epoch epoch_;
  std::string root_;    // this object's key prefix
  std::string prefix_;  // where its user data lives (root_ + 'd')
  ObjectCache cache_;   // the committed state of the keys under root_, as far as known
  TurnBatch batch_;     // reads through cache_
  std::optional<Error> failure_;
  std::uint64_t alarm_sequence_ = 0;
  std::vector<AlarmIndexChange> alarm_changes_;
};

}  // namespace dorm::detail
