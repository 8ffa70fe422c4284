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
//
// Shared (`shared=true`): several dorm processes ("nodes") serve the store together. Each
// holds the owner lock in shared mode (so nodes and a lone owner exclude each other, either
// way round), and each object has a lease (leases.hpp) in the table
// `dorm_leases`, nodes announce themselves in `dorm_nodes`, tokens come from the sequence
// `dorm_fencing_tokens`, and an object's commits (commit_leased) begin by checking its
// token with the function `dorm_check_lease`, which holds the lease row (FOR SHARE) until
// the commit ends, so a take-over waits for a commit under way and the commit after it is
// refused: still one round trip. The lease tables exist in every read-write store (created
// with the data table, under a transaction-level advisory lock so nodes starting together
// do not race); a store that is not shared may use them too.
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

class PostgresBackend final : public Backend, public LeaseTable {
 public:
  struct Settings {
    // A libpq connection URI (postgresql://…) holding only libpq's own parameters.
    std::string conninfo;
    std::string table = "dorm_kv";
    std::size_t pool = 4;
    std::chrono::seconds lock_wait{10};
    Durability durability = Durability::process;
    // Several processes serve the store (no owner lock; objects fenced by their leases).
    bool shared = false;
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
  Result<void> commit_leased(const WriteBatch& batch, std::string_view object,
                             std::uint64_t token) override;
  LeaseTable* leases() override { return mode_ == OpenMode::read_write ? this : nullptr; }
  // not_supported: back a PostgreSQL store up with the server's own tools (pg_dump of the
  // table, or base backups with WAL archiving), as docs/storage.md describes.
  Result<CopyStats> backup_to(const std::string& path) override;
  Durability durability() const override { return settings_.durability; }
  // `postgres://USER@HOST:PORT/DB?table=T`, never with a password.
  std::string describe() const override;
  OpenMode mode() const { return mode_; }

  // LeaseTable (leases.hpp), over dorm_leases and dorm_nodes.
  Result<LeaseGrant> acquire(std::string_view object, std::string_view node, std::int64_t now_ms,
                             std::int64_t expires_ms) override;
  Result<std::vector<std::string>> renew(std::string_view node, std::span<const HeldLease> held,
                                         std::int64_t expires_ms) override;
  Result<void> release(std::string_view object, std::uint64_t token) override;
  Result<std::optional<LeaseHolder>> holder(std::string_view object) override;
  Result<void> announce(const NodeRecord& node) override;
  Result<std::vector<NodeRecord>> nodes() override;
  Result<void> retire(std::string_view node) override;

  // The value of `synchronous_commit` on a pooled connection, so tests can check what
  // durability is in force.
  Result<std::string> synchronous_commit();

  class Connection;

 private:
  PostgresBackend(Settings settings, OpenMode mode);

  // A pooled connection for the caller's exclusive use until the lease ends.
  class Checkout;
  Result<Checkout> checkout();
  void give_back(std::unique_ptr<Connection> connection);
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
  // Creates the data table, the owner and lease tables and the lease check, once per
  // database whoever else starts at the same time.
  Result<void> create_schema(Connection& c);
  // commit() and commit_leased(): with `object`, the batch applies only under its lease.
  Result<void> commit_batch(const WriteBatch& batch, const std::string_view* object,
                            std::uint64_t token);

  const Settings settings_;
  const OpenMode mode_;
  std::string description_;
  std::string store_;  // schema.table: the store's name in dorm_owners, dorm_leases, dorm_nodes
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
