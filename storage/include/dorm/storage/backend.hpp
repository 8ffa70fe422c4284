// dorm::storage::Backend — the ordered key-value store every durable object lives in.
//
// This is the one interface an embedder implements to plug in a store of their own.
// Keys and values are arbitrary byte strings (any byte, 0x00 and 0xFF included); keys are
// ordered byte-wise, as by memcmp, with a shorter key ordered before every longer key it
// is a prefix of. The runtime places each object under its own key prefix and keeps alarms
// and runtime indexes in the same store, so that one atomic commit covers an object's
// state, its alarms and its index entries together.
//
// Thread-safety: every method may be called concurrently from any thread. Commits are
// linearizable: each takes effect atomically at one instant between its call and its
// return, and a read that starts after a commit returned sees it (and every commit before).
//
// Errors: methods return dorm::Result. A failed commit applied nothing, except where a
// backend documents otherwise (FaultyBackend can simulate "durable but reported failed",
// as a real disk or network store may produce: callers must tolerate it). Invalid input
// (such as a range whose end precedes its start) fails with invalid_argument and changes
// nothing.
//
// Durability (chosen when the store is opened, see storage_uri.hpp):
//   process  an acknowledged commit survives the process being killed (SIGKILL, crash)
//   fsync    an acknowledged commit also survives power loss or a kernel crash
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/leases.hpp"
#include "dorm/storage/write_batch.hpp"

namespace dorm::storage {

enum class Durability {
  process,  // survives a killed process: written to the OS before the commit returns
  fsync,    // survives power loss: synced to stable storage before the commit returns
};

std::string_view to_string(Durability d) noexcept;

// How a store is opened (see open.hpp).
enum class OpenMode {
  // Creates the store if it is missing and takes its owner lock: a second read_write
  // opener, in this process or another, gets `busy`.
  read_write,
  // For looking at a store another process may be serving (`dorm inspect`): never writes
  // to the store's files, never takes or waits for the owner lock, and never creates
  // anything (a missing store is not_found). Reads see at least every commit acknowledged
  // before the open; commit() fails with read_only and changes nothing.
  read_only,
};

std::string_view to_string(OpenMode m) noexcept;

struct KeyValue {
  std::string key;
  std::string value;

  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

// Which keys a scan visits, in which direction, and how many it returns.
//
// The range is [start, end): start inclusive, end exclusive; an empty `start` is the
// beginning of the key space and an absent `end` its end. A forward scan returns keys in
// ascending order beginning at the smallest key in range; a reverse scan returns them in
// descending order beginning at the largest. `start_after` resumes a scan where an earlier
// page stopped: a forward scan then returns only keys > start_after, a reverse scan only
// keys < start_after (always intersected with the range). `limit` caps the number of
// results; 0 means no cap.
struct ScanOptions {
  std::string start;
  std::optional<std::string> end;
  std::optional<std::string> start_after;
  bool reverse = false;
  std::size_t limit = 0;

  // Every key that begins with `prefix`: [prefix, successor of prefix). A prefix made
  // only of 0xFF bytes (or empty) has no successor, so the range runs to the end.
  static ScanOptions with_prefix(std::string_view prefix);

  // The smallest key greater than every key beginning with `prefix`, if one exists:
  // drop trailing 0xFF bytes, then add one to the last byte.
  static std::optional<std::string> prefix_successor(std::string_view prefix);

  // For implementers. invalid_argument when `end` is present and less than `start`.
  Result<void> validate() const;

  // For implementers: the keys this scan may return, with start_after applied, as
  // [lower, upper) (no upper: to the end of the key space). Empty when upper <= lower.
  struct Bounds {
    std::string lower;
    std::optional<std::string> upper;
    bool empty() const { return upper && *upper <= lower; }
  };
  Bounds bounds() const;
};

// What a copy of a store holds (Backend::backup_to): its entries, and the bytes of their
// keys and values together.
struct CopyStats {
  std::uint64_t keys = 0;
  std::uint64_t bytes = 0;

  friend bool operator==(const CopyStats&, const CopyStats&) = default;
};

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Closes the store. Every commit that returned success before is durable as promised by
  // the store's durability mode. Must not run concurrently with other calls.
  virtual ~Backend() = default;

  // The value stored at `key`, std::nullopt if none.
  virtual Result<std::optional<std::string>> get(std::string_view key) = 0;

  // The values at `keys`, in the same order (std::nullopt where absent), all read at one
  // point in time: no commit is seen by some of them and not others.
  virtual Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) = 0;

  // The entries selected by `options` (see ScanOptions), read at one point in time: for
  // every commit, the scan sees all of its writes or none of them.
  // Errors: invalid_argument when `end` is present and less than `start`.
  virtual Result<std::vector<KeyValue>> scan(const ScanOptions& options) = 0;

  // Applies every operation of `batch` atomically, in batch order (a later operation on
  // the same key wins), and durably as the store's durability mode promises, before
  // returning success. An empty batch succeeds and changes nothing.
  // Errors: invalid_argument for a delete_range whose end precedes its begin (nothing is
  // applied); no_space when the store's disk is too full to take it (nothing is applied;
  // see check_space); io_error when the store could not write (nothing was applied).
  virtual Result<void> commit(const WriteBatch& batch) = 0;

  // Whether commits are being refused for lack of space right now, without writing
  // anything: no_space (with a message naming the free space and the reserve) while they
  // are, success otherwise. Cheap enough to ask before every request (RocksDB answers from
  // a cached free-space figure). Reads are never refused for space. The default, for a
  // store that keeps no space reserve, always succeeds.
  virtual Result<void> check_space() { return {}; }

  // Optional capability: online backup (`dorm backup`, backup.hpp). Writes a copy of the
  // whole store as a new store of the same kind at `path`, which must not exist yet, and
  // returns what the copy holds. The copy is one point in time: for every commit, it holds
  // all of its writes or none of them, and it holds at least every commit a read through
  // this handle would have seen when the call started. Other handles, in this process or
  // another, may go on committing meanwhile, and are not held up. The copy is durable
  // (synced) when this returns.
  // Errors: not_supported (the default, for a store that cannot do this; nothing is
  // written); invalid_argument when `path` exists; the store's own errors otherwise,
  // after which `path` may hold an unusable partial copy (backup.hpp removes it).
  virtual Result<CopyStats> backup_to(const std::string& path);

  // Optional capability: leases, for a store several processes serve together
  // (leases.hpp). Null (the default) for a store only one process may open.
  virtual LeaseTable* leases() { return nullptr; }

  // Optional capability, with leases(): commits `batch` as commit() does, but only if
  // `token` is the current lease token of `object` (LeaseTable), checked atomically with
  // the commit and holding the lease still until it is done.
  // Errors: fenced when the lease moved on (nothing is applied); not_supported (the
  // default) for a store without leases; commit()'s own errors otherwise.
  virtual Result<void> commit_leased(const WriteBatch& batch, std::string_view object,
                                     std::uint64_t token);

  // The durability this store was opened with.
  virtual Durability durability() const = 0;

  // A printable name for logs and errors, e.g. "rocksdb:./dorm-data".
  virtual std::string describe() const = 0;
};

// Forwards every call to another backend. Derive from it to override only some methods,
// as FaultyBackend does. The target must outlive the wrapper.
class BackendWrapper : public Backend {
 public:
  explicit BackendWrapper(Backend& target) : target_(target) {}

  Result<std::optional<std::string>> get(std::string_view key) override {
    return target_.get(key);
  }
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override {
    return target_.get_many(keys);
  }
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override {
    return target_.scan(options);
  }
  Result<void> commit(const WriteBatch& batch) override { return target_.commit(batch); }
  Result<void> check_space() override { return target_.check_space(); }
  Result<CopyStats> backup_to(const std::string& path) override { return target_.backup_to(path); }
  LeaseTable* leases() override { return target_.leases(); }
  Result<void> commit_leased(const WriteBatch& batch, std::string_view object,
                             std::uint64_t token) override {
    return target_.commit_leased(batch, object, token);
  }
  Durability durability() const override { return target_.durability(); }
  std::string describe() const override { return target_.describe(); }

  Backend& target() const { return target_; }

 private:
  Backend& target_;
};

}  // namespace dorm::storage
