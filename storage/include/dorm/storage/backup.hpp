// Backups of a store: `dorm backup` and `dorm restore`.
//
// A backup is a directory holding two things:
//
//   DIR/store              the copy: a store of the same kind as the original (a RocksDB
//                          directory or a SQLite file), so anything that opens a store
//                          read-only (`dorm inspect`) can read it as it is
//   DIR/dorm-backup.json   the manifest, written (atomically) only once the copy is synced:
//                          a directory without one is an unfinished backup, and restore
//                          refuses it
//
// The copy is made online, while a server may be committing to the store: the source is
// opened read-only (never its lock, never a write) and Backend::backup_to copies one
// point in time of it, which holds at least every commit acknowledged before the backup
// started. A backend that cannot do this (memory:, a custom backend without backup_to)
// fails with not_supported.
//
// A restore goes the other way, into a store nobody is using: it takes the target's lock
// (a running server holds it: busy), refuses a store that holds anything unless told to
// replace it (`force`), and copies the backup's entries in with synced commits. While it
// copies, a marker next to the target (restore_marker_path) makes every read-write open
// of the target fail, so a restore cut short is never served as if it were whole; the
// marker goes once the last entry is synced, and a restore with `force` over it starts
// again. Every refusal comes before anything is written. docs/operations.md#backups.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/storage_uri.hpp"

namespace dorm::storage {

inline constexpr std::string_view kBackupManifestName = "dorm-backup.json";
inline constexpr std::string_view kBackupStoreName = "store";
// The manifest's format; a restore refuses a newer one.
inline constexpr int kBackupFormatVersion = 1;

struct BackupManifest {
  int format_version = kBackupFormatVersion;
  Scheme backend = Scheme::rocksdb;  // the copy's kind, always the original's
  std::string source;                // the original store, as Backend::describe() named it
  // Wall-clock Unix milliseconds at which the source was opened for the copy: the copy
  // holds every commit acknowledged before this moment.
  std::int64_t created_at_ms = 0;
  std::string dorm_version;
  CopyStats contents;  // what the copy holds
  // The runtime's generation in the copy, when the caller can read it (the storage layer
  // knows nothing of generations; see BackupOptions).
  std::optional<std::uint64_t> generation;

  // One JSON object (RapidJSON), with createdAt also as ISO-8601 UTC for people.
  std::string to_json() const;
  // Errors: corruption, naming `where` and the field, for text that is not such an object;
  // not_supported for a format_version newer than this program's.
  static Result<BackupManifest> from_json(std::string_view json, std::string_view where);

  friend bool operator==(const BackupManifest&, const BackupManifest&) = default;
};

struct BackupOptions {
  std::string dorm_version;  // recorded in the manifest
  // Reads the runtime's generation from the finished copy (opened read-only). Optional;
  // an error from it fails the backup.
  std::function<Result<std::optional<std::uint64_t>>(Backend& copy)> read_generation;
};

// Backs `source` up into `dir`, which must not exist or be an empty directory (it is made,
// parents included). Returns the manifest written.
// Errors: invalid_argument for memory: (a memory store lives only inside the process that
// made it) and for a `dir` that exists and is not empty; not_found when the source does
// not exist; not_supported from a backend without backup_to; the backends' errors. On any
// error nothing is left in `dir` (nor `dir` itself, if this call made it).
Result<BackupManifest> create_backup(const StorageUri& source, const std::string& dir,
                                     const BackupOptions& options);

// The manifest of the backup in `dir`.
// Errors: not_found when `dir` has no manifest (no backup, or an unfinished one); those of
// BackupManifest::from_json; io_error when it cannot be read.
Result<BackupManifest> read_backup_manifest(const std::string& dir);

// Whether `path` is a directory holding a backup manifest.
bool is_backup_dir(const std::string& path);

// The store inside the backup in `dir` (durability as the default: it is only read).
StorageUri backup_store_uri(const std::string& dir, const BackupManifest& manifest);

struct RestoreOptions {
  // Replace what the target holds (everything in it is deleted first). Without it a
  // target that holds any entry is refused.
  bool force = false;
};

// Restores the backup in `dir` into the store `target`, made if missing. Returns what was
// copied (always the manifest's contents). The target's own durability option is ignored:
// every commit of a restore is synced.
// Refusals, all before anything is written: not_found / corruption / not_supported from
// read_backup_manifest; invalid_argument when the target is memory:, is of another kind
// than the backup, is the backup's own store, or holds entries without `force`; corruption
// when the backup's store does not hold what its manifest says; busy when another process
// (a server) holds the target's lock.
Result<CopyStats> restore_backup(const std::string& dir, const StorageUri& target,
                                 const RestoreOptions& options);

// Where a restore into `target` keeps its marker while it copies (see above): a file
// `DORM-RESTORE-INCOMPLETE` inside a RocksDB directory, `PATH.restore-incomplete` beside a
// SQLite file; empty for memory:.
std::string restore_marker_path(const StorageUri& target);

}  // namespace dorm::storage
