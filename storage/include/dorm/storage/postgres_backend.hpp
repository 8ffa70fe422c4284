// PostgresBackend — `postgres://…`, one table in a PostgreSQL database (libpq).
//
// The store is the table `kv(k bytea PRIMARY KEY, v bytea NOT NULL)` (named by the URI's
// `table` option, default `dorm_kv`). PostgreSQL orders bytea as memcmp does, a shorter
// key before every longer key it is a prefix of: exactly the Backend's key order, so scans
// are plain index range scans. Every read is one statement, so it reads one snapshot
// (READ COMMITTED takes a snapshot per statement); get_many is one `k = ANY($1)`.
//
// A commit is one transaction sent as one libpq pipeline (one round trip): the batch is
// first reduced to its net effect (range deletes, then the last put or delete of each key
// after them), which is what applying it in order would leave, and sent as BEGIN, one
// DELETE per range, one DELETE of an array of keys, one upsert of arrays, COMMIT.
//
// Connections come from a pool (`pool`, default 4), each used by one thread at a time;
// a connection that broke is reset on its next use. Every statement is prepared once per
// connection and exchanged in binary, so keys and values are never quoted or escaped.
//
// Durability: `process` is a committed transaction with `synchronous_commit` as the
// operator configured it (any setting survives dorm's process being killed: the commit is
// in the server). `fsync` sets `synchronous_commit = on` for dorm's connections and
// refuses to open against a server running with `fsync = off`, which could not keep it.
// Replication (synchronous_standby_names) is the operator's: docs/storage.md.
//
// One owner: a read_write open takes a session-level advisory lock keyed by the database
// and table on a connection of its own, held while the store is open; a second opener
// waits up to `lock_wait` seconds (default 10: the PostgreSQL session of a killed owner
// ends when the server notices its socket closed) and then gets `busy`, naming the
// PostgreSQL process that holds it. Each read-write open also bumps the store's token in
// the table `dorm_owners`. A server restart ends the owner's lock session with the rest:
// before a new pooled connection is used, the owner takes its lock back, and if another
// opener got it meanwhile (the lock is held, or the token moved) the handle is fenced:
// every call fails with `fenced` from then on. A read_only open takes no lock, creates nothing (a
// missing table is not_found) and runs its statements in read-only transactions.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dorm/storage/backend.hpp"
#include "dorm/storage/storage_uri.hpp"

namespace dorm::storage {

class PostgresBackend final : public Backend {
 public:
  struct Settings {
    // A libpq connection URI (postgresql://…) holding only libpq's own parameters.
    std::string conninfo;
    std::string table = "dorm_kv";
    std::size_t pool = 4;
    std::chrono::seconds lock_wait{10};
    Durability durability = Durability::process;
  };

  // The settings a `postgres:` StorageUri names (see storage_uri.hpp for the options).
  // Errors: invalid_argument for an option value dorm or libpq refuses, whose message is
  // the reason alone (parse_storage_uri says which URI).
  static Result<Settings> settings_from(const StorageUri& uri);

  // Connects, checks the server (version ≥ 12, fsync when durability is fsync), takes the
  // owner lock and creates the table (read_write), or finds the table (read_only).
  // Errors: unavailable when the server cannot be reached; busy when another process
  // owns the store; not_found for a read_only open of a missing table; invalid_argument
  // for a server that cannot keep the durability asked for.
  static Result<std::unique_ptr<PostgresBackend>> open(const Settings& settings,
                                                       OpenMode mode = OpenMode::read_write);
  ~PostgresBackend() override;

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override;
  Result<void> commit(const WriteBatch& batch) override;
  // not_supported: back a PostgreSQL store up with the server's own tools (pg_dump of the
  // table, or base backups with WAL archiving), as docs/storage.md describes.
  Result<CopyStats> backup_to(const std::string& path) override;
  Durability durability() const override { return settings_.durability; }
  // `postgres://USER@HOST:PORT/DB?table=T`, never with a password.
  std::string describe() const override;
  OpenMode mode() const { return mode_; }

  // The value of `synchronous_commit` on a pooled connection, so tests can check what
  // durability is in force.
  Result<std::string> synchronous_commit();

  class Connection;

 private:
  PostgresBackend(Settings settings, OpenMode mode);

  // A pooled connection for the caller's exclusive use until the lease ends.
  class Lease;
  Result<Lease> acquire();
  void release(std::unique_ptr<Connection> connection);
  // Runs the read `f` on a pooled connection.
  template <class F>
  auto read(F&& f) -> decltype(f(std::declval<Connection&>()));
  // A new connection set up for this store; with `prepare`, its statements are prepared
  // (which needs the table).
  Result<std::unique_ptr<Connection>> connect_one(bool prepare);
  // Takes the advisory lock that makes this handle the store's one owner, on `c`, waiting
  // up to lock_wait when `wait`.
  Result<void> take_owner_lock(Connection& c, bool wait);
  // Whether this handle still owns the store: its lock session is alive, or the lock could
  // be taken back with the owner token unchanged. Otherwise the handle is fenced for good.
  Result<void> confirm_owner();
  Error fenced_error() const;

  const Settings settings_;
  const OpenMode mode_;
  std::string description_;
  std::mutex owner_mutex_;
  std::unique_ptr<Connection> owner_;  // holds the advisory lock; null when read_only
  std::string token_;                  // this owner's row in dorm_owners
  std::atomic<bool> fenced_{false};

  std::mutex pool_mutex_;
  std::condition_variable pool_returned_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_connections_ = 0;
};

}  // namespace dorm::storage
