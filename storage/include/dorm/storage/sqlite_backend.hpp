// SqliteBackend — `sqlite:PATH`, one SQLite database file.
//
// One table, `kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID`: BLOB keys compare with
// memcmp, which is exactly the Backend's byte-wise order. WAL journal mode, so readers
// never block the writer and each SELECT reads one consistent snapshot. Each thread gets
// its own connection (SQLite connections must not be shared between concurrent threads),
// with prepared statements kept per connection and a busy timeout for the moments two
// connections want the write lock. Durability maps onto `synchronous`: NORMAL for process
// (in WAL mode a commit is in the OS before it returns: survives a killed process),
// FULL for fsync (the WAL is synced at every commit: survives power loss).
//
// A dorm store has one owner process: the backend holds an exclusive lock on
// `PATH.lock` for as long as it is open, and a second opener gets `busy`.
//
// Opened read_only (see OpenMode), it takes no lock, creates nothing (not the database,
// not `PATH.lock`) and opens its connections with SQLITE_OPEN_READONLY, setting no
// pragma: it is one more WAL reader beside the owner, never blocks the owner's commits,
// and each read sees the latest commit. Being a WAL reader, it maps the owner's `-shm`
// index, and when no owner is running SQLite may create empty `-wal`/`-shm` files next to
// the database; the database itself is never written.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dorm/storage/backend.hpp"

namespace dorm::storage {

class SqliteBackend final : public Backend {
 public:
  // Opens or creates the database file at `path` (read_write), or opens an existing one
  // read-only.
  // Errors: busy when another process has it open through dorm (read_write); not_found
  // when a read_only `path` does not exist; io_error otherwise.
  static Result<std::unique_ptr<SqliteBackend>> open(const std::string& path, Durability durability,
                                                     OpenMode mode = OpenMode::read_write);
  ~SqliteBackend() override;

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override;
  Result<void> commit(const WriteBatch& batch) override;
  // Copies the database with SQLite's online backup API (sqlite3_backup_*) from this
  // handle's connection, all pages in one step: one read transaction, so one snapshot, and
  // being a WAL reader it never blocks the owner's commits (the owner cannot checkpoint
  // past it meanwhile, so its WAL may grow during the copy).
  Result<CopyStats> backup_to(const std::string& path) override;
  Durability durability() const override { return durability_; }
  std::string describe() const override;
  OpenMode mode() const { return mode_; }

  // The value of `PRAGMA synchronous` on the calling thread's connection (1 = NORMAL,
  // 2 = FULL), so tests can check what durability is in force.
  Result<int> synchronous_pragma();

  class Connection;

 private:
  SqliteBackend(std::string path, Durability durability, OpenMode mode, int lock_fd);
  Result<Connection*> connection();

  const std::string path_;
  const Durability durability_;
  const OpenMode mode_;
  const std::uint64_t instance_;  // keys this backend's per-thread connections
  int lock_fd_;                   // -1 when read_only
  std::mutex connections_mutex_;
  std::vector<std::shared_ptr<Connection>> connections_;  // every thread's, closed at close
};

}  // namespace dorm::storage
