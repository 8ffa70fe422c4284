// RocksDbBackend — the default store (`rocksdb:PATH`), embedded RocksDB.
//
// One database, default column family only, in total order: no prefix extractor, because
// scans cross object prefixes (alarm and index scans, `inspect`), and an iterator with a
// prefix extractor is undefined once it leaves the seek prefix. Durability maps onto the
// write-ahead log: `process` writes each commit's WAL record to the OS before returning
// (WriteOptions::sync = false; survives SIGKILL), `fsync` also syncs the WAL
// (WriteOptions::sync = true; survives power loss).
//
// Disk full: a read_write store keeps a reserve of free space (Tuning::reserve, see
// space_reserve.hpp) and refuses commits that would eat into it with no_space, applying
// nothing; reads go on. RocksDB's info log goes through engine_log.hpp (never to a LOG file,
// whose writer asserts on a full disk), RocksDB's own recovery from a full disk is off
// (it waits for 64 MiB free and retries every 5 s), and the backend resumes the database
// itself once the reserve is free again. Opening read_write with less free space than the
// reserve fails with no_space before RocksDB writes anything. docs/storage.md has the rest.
//
// Including this header pulls in RocksDB's headers; most code wants open_backend().
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>
#include <rocksdb/options.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <memory>
#include <mutex>
#include <string>

#include "dorm/storage/backend.hpp"
#include "dorm/storage/space_reserve.hpp"

namespace dorm::storage {

class RocksDbBackend final : public Backend {
 public:
  struct Tuning {
    // Block cache shared by all table readers.
    std::size_t block_cache_bytes = 64u << 20;
    // Replaces the file system (tests wrap the default one to count WAL syncs).
    std::shared_ptr<rocksdb::FileSystem> file_system;
    // Free space kept on the store's filesystem (read_write only).
    ReserveSpec reserve;
    // Replaces the look at the filesystem's free space (tests script a disk with it); by
    // default probe_filesystem(path).
    SpaceReserve::Probe probe;
    // Replaces the monotonic clock (milliseconds) the reserve's refresh interval and the
    // pause between resume attempts are measured on.
    SpaceReserve::Now now;
  };

  // The exact Options dorm opens a database with (commented in the .cpp); the storage
  // benchmark opens its raw-RocksDB baseline with the same.
  static rocksdb::Options make_options(const Tuning& tuning);
  static rocksdb::WriteOptions make_write_options(Durability durability);

  // Opens or creates the database in directory `path` (read_write), or opens an existing
  // one read-only (see OpenMode).
  //
  // read_only uses DB::OpenForReadOnly: it takes no LOCK, so it works while a server has
  // the database open, and it replays the WAL into its own memory, so it sees every commit
  // acknowledged before it opened, flushed or not; it does not follow later ones. It
  // writes nothing into the directory, not even RocksDB's info LOG (RocksDB 7.8 opens none
  // read-only; tests/storage/read_only_test.cpp checks every file is left as it was).
  // Errors: busy when another process holds its LOCK (read_write); no_space when a
  // read_write open finds less free space than the reserve (nothing is written); not_found
  // when a read_only `path` holds no database; io_error otherwise.
  static Result<std::unique_ptr<RocksDbBackend>> open(const std::string& path,
                                                      Durability durability, OpenMode mode,
                                                      const Tuning& tuning);
  static Result<std::unique_ptr<RocksDbBackend>> open(const std::string& path,
                                                      Durability durability, const Tuning& tuning) {
    return open(path, durability, OpenMode::read_write, tuning);
  }
  static Result<std::unique_ptr<RocksDbBackend>> open(const std::string& path,
                                                      Durability durability,
                                                      OpenMode mode = OpenMode::read_write) {
    return open(path, durability, mode, Tuning{});
  }

  ~RocksDbBackend() override;

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override;
  Result<void> commit(const WriteBatch& batch) override;
  Result<void> check_space() override;
  // Copies the store through one iterator (so one implicit snapshot) into a new database
  // at `path`, written without a WAL and flushed to synced table files at the end. Not a
  // Checkpoint: that hard-links the live table files and needs control over file deletion,
  // which a read-only instance (how `dorm backup` opens a served store) does not have. A
  // read-only instance holds every table file open (max_open_files = -1), so the server's
  // compactions cannot take one away mid-copy. docs/operations.md#backups has the reasoning.
  Result<CopyStats> backup_to(const std::string& path) override;
  Durability durability() const override { return durability_; }
  std::string describe() const override;
  OpenMode mode() const { return mode_; }
  // The reserve this store keeps; null when read-only or with reserve=0.
  const SpaceReserve* reserve() const { return reserve_.get(); }

  // The underlying database, for tools that need RocksDB itself (statistics, benchmarks).
  rocksdb::DB& db() { return *db_; }

 private:
  class Events;

  RocksDbBackend(std::string path, Durability durability, OpenMode mode,
                 std::unique_ptr<rocksdb::DB> db);
  // With space free again, takes the database out of the stopped state a failed write or
  // flush left it in (DB::Resume); success when it takes writes.
  Result<void> resume_if_stopped();

  std::string path_;
  Durability durability_;
  OpenMode mode_;
  rocksdb::WriteOptions write_options_;
  std::unique_ptr<rocksdb::Env> env_;  // only with Tuning::file_system; outlives db_
  std::unique_ptr<SpaceReserve> reserve_;
  // Set (by a failed write or RocksDB's background-error callback) when the database has
  // stopped taking writes; cleared by a successful DB::Resume.
  std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  std::mutex resume_mutex_;  // guards the two below
  static constexpr std::chrono::milliseconds kResumeInterval{1000};
  std::optional<Error> last_resume_failure_;
  std::int64_t resume_failed_at_ms_ = 0;
  SpaceReserve::Now now_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace dorm::storage
