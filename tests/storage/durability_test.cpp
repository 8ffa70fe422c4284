// `fsync` durability is real: counted WAL syncs for RocksDB, the pragma in force for SQLite.
// (A SIGKILL cannot tell fsync from process apart; only power loss could. Counting the
// syncs each acknowledged commit waits for is the observable difference.)
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/sqlite_backend.hpp"
#include "temp_dir.hpp"
#include "numbered.hpp"

using dorm::storage::Durability;
using dorm::storage::WriteBatch;
using dorm::testing::TempDir;

namespace {

// Counts Sync/Fsync/RangeSync calls on write-ahead-log files (*.log).
class WalSyncCounter : public rocksdb::FileSystemWrapper {
 public:
  explicit WalSyncCounter(std::shared_ptr<rocksdb::FileSystem> target)
      : FileSystemWrapper(std::move(target)) {}

  static const char* kClassName() { return "WalSyncCounter"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    auto status = target()->NewWritableFile(name, options, result, dbg);
    if (status.ok() && name.ends_with(".log")) {
      *result = std::make_unique<CountingFile>(std::move(*result), syncs_);
    }
    return status;
  }

  std::uint64_t syncs() const { return syncs_.load(); }

 private:
  class CountingFile : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    CountingFile(std::unique_ptr<rocksdb::FSWritableFile> file, std::atomic<std::uint64_t>& n)
        : FSWritableFileOwnerWrapper(std::move(file)), n_(n) {}
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
      ++n_;
      return FSWritableFileOwnerWrapper::Sync(o, d);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
      ++n_;
      return FSWritableFileOwnerWrapper::Fsync(o, d);
    }
    rocksdb::IOStatus RangeSync(std::uint64_t off, std::uint64_t len, const rocksdb::IOOptions& o,
                                rocksdb::IODebugContext* d) override {
      ++n_;
      return FSWritableFileOwnerWrapper::RangeSync(off, len, o, d);
    }

   private:
    std::atomic<std::uint64_t>& n_;
  };

  std::atomic<std::uint64_t> syncs_{0};
};

// WAL syncs counted during `commits` acknowledged commits.
std::uint64_t wal_syncs_during_commits(Durability durability, int commits) {
  TempDir dir;
  auto counter = std::make_shared<WalSyncCounter>(rocksdb::FileSystem::Default());
  dorm::storage::RocksDbBackend::Tuning tuning;
  tuning.file_system = counter;
  auto backend = dorm::storage::RocksDbBackend::open(dir / "db", durability, tuning);
  REQUIRE(backend.ok());
  std::uint64_t before = counter->syncs();
  for (int i = 0; i < commits; ++i) {
    WriteBatch batch;
    batch.put(dorm::testing::numbered("k", i), "v");
    REQUIRE((*backend)->commit(batch).ok());
  }
  return counter->syncs() - before;
}

}  // namespace

TEST_CASE("rocksdb fsync durability syncs the WAL at least once per acknowledged commit") {
  constexpr int kCommits = 50;
  CHECK(wal_syncs_during_commits(Durability::fsync, kCommits) >= kCommits);
}

TEST_CASE("rocksdb process durability never waits for a WAL sync") {
  CHECK(wal_syncs_during_commits(Durability::process, 50) == 0);
}

TEST_CASE("sqlite durability sets synchronous=FULL for fsync and NORMAL for process") {
  TempDir dir;
  {
    auto fsync = dorm::storage::SqliteBackend::open(dir / "a.sqlite", Durability::fsync);
    REQUIRE(fsync.ok());
    CHECK(*(*fsync)->synchronous_pragma() == 2);  // FULL
  }
  auto process = dorm::storage::SqliteBackend::open(dir / "b.sqlite", Durability::process);
  REQUIRE(process.ok());
  CHECK(*(*process)->synchronous_pragma() == 1);  // NORMAL
  // Every thread's own connection gets the same setting.
  int on_other_thread = 0;
  std::thread([&] { on_other_thread = *(*process)->synchronous_pragma(); }).join();
  CHECK(on_other_thread == 1);
}

TEST_CASE("a store has one owner: a second open of the same path is busy") {
  TempDir dir;
  for (std::string uri_path : {std::string("rocksdb"), std::string("sqlite")}) {
    CAPTURE(uri_path);
    std::string path = dir / (uri_path + "-store");
    auto open = [&]() -> dorm::Result<void> {
      if (uri_path == "rocksdb") {
        auto b = dorm::storage::RocksDbBackend::open(path, Durability::process);
        if (!b) return std::move(b).error();
        auto second = dorm::storage::RocksDbBackend::open(path, Durability::process);
        if (second) return dorm::Error{dorm::ErrorCode::internal, "second open succeeded"};
        return std::move(second).error();
      }
      auto b = dorm::storage::SqliteBackend::open(path, Durability::process);
      if (!b) return std::move(b).error();
      auto second = dorm::storage::SqliteBackend::open(path, Durability::process);
      if (second) return dorm::Error{dorm::ErrorCode::internal, "second open succeeded"};
      return std::move(second).error();
    };
    auto r = open();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == dorm::ErrorCode::busy);
  }
}

TEST_CASE("an unusable path is an io_error naming it") {
  TempDir dir;
  std::string file = dir / "plain-file";
  { std::ofstream(file) << "not a directory"; }
  auto rocks = dorm::storage::RocksDbBackend::open(file + "/db", Durability::process);
  REQUIRE_FALSE(rocks.ok());
  CHECK(rocks.error().code == dorm::ErrorCode::io_error);
  CHECK(rocks.error().message.find(file) != std::string::npos);
  auto lite = dorm::storage::SqliteBackend::open(file + "/db.sqlite", Durability::process);
  REQUIRE_FALSE(lite.ok());
  CHECK(lite.error().code == dorm::ErrorCode::io_error);
  CHECK(lite.error().message.find(file) != std::string::npos);
}
