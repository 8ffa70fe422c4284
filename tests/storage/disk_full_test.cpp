// The RocksDB backend on a disk that really fills up: a small tmpfs of the test's own.
// Before dorm routed RocksDB's info log through its own logger, the second case aborted
// the process (RocksDB's LOG writer asserts `sync_without_flush_called_` when a write to it
// fails on a full disk), and a store opened on a full disk aborted in DB::Open.
#include <doctest/doctest.h>

#include <string>

#include "dorm/storage/rocksdb_backend.hpp"
#include "tmpfs_mount.hpp"

using dorm::ErrorCode;
using dorm::storage::Durability;
using dorm::storage::OpenMode;
using dorm::storage::ReserveSpec;
using dorm::storage::RocksDbBackend;
using dorm::storage::WriteBatch;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::size_t kValueBytes = 50'000;
// Bounds every fill loop: far more commits than the filesystems below can hold.
constexpr int kMaxCommits = 2'000;

// Values that do not compress (RocksDB's tables would shrink repeated bytes to nothing).
std::string value_for(int i, char which) {
  std::string v(kValueBytes, '\0');
  std::uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i * 2 + (which == 'b'));
  for (auto& c : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return v;
}

// Two keys of 50 KB each: ~100 KB, as an MCP tool call storing 100 KB.
WriteBatch pair(int i) {
  WriteBatch batch;
  batch.put("k" + std::to_string(i) + "a", value_for(i, 'a'));
  batch.put("k" + std::to_string(i) + "b", value_for(i, 'b'));
  return batch;
}

RocksDbBackend::Tuning with_reserve(const char* reserve) {
  RocksDbBackend::Tuning tuning;
  tuning.reserve = *ReserveSpec::parse(reserve);
  return tuning;
}

// Commits pair(0), pair(1), ... until one fails; returns how many succeeded and the error.
std::pair<int, dorm::Error> fill(RocksDbBackend& db) {
  for (int i = 0; i < kMaxCommits; ++i) {
    auto committed = db.commit(pair(i));
    if (!committed) return {i, committed.error()};
  }
  FAIL("the filesystem never filled up");
  return {0, dorm::Error{ErrorCode::internal, ""}};
}

void check_pairs(RocksDbBackend& db, int from, int to) {
  for (int i = from; i < to; ++i) {
    CAPTURE(i);
    auto a = db.get("k" + std::to_string(i) + "a");
    REQUIRE(a.ok());
    REQUIRE(a->has_value());
    CHECK(**a == value_for(i, 'a'));
    CHECK(db.get("k" + std::to_string(i) + "b")->value() == value_for(i, 'b'));
  }
}

void check_absent(RocksDbBackend& db, int i) {
  CHECK(!db.get("k" + std::to_string(i) + "a")->has_value());
  CHECK(!db.get("k" + std::to_string(i) + "b")->has_value());
}

}  // namespace

TEST_CASE("full disk, with a reserve: commits refused whole, reads go on, writes resume; no open under it") {
  dorm::testing::TmpfsMount fs(32 * MiB);
  fs.ballast("ballast", 12 * MiB);
  int stored = 0;
  {
    auto opened = RocksDbBackend::open(fs / "db", Durability::process, OpenMode::read_write,
                                       with_reserve("8MiB"));
    REQUIRE(opened.ok());
    auto& db = **opened;
    auto [count, error] = fill(db);
    stored = count;
    CHECK(stored > 10);
    CHECK(error.code == ErrorCode::no_space);
    CHECK(error.message.find("under the reserve of 8.0 MiB") != std::string::npos);
    CHECK(fs.free_bytes() >= 7 * MiB);  // refused before the disk was full, not by it
    check_absent(db, stored);           // nothing of the refused batch
    check_pairs(db, 0, stored);         // every acknowledged one, readable
    CHECK(db.check_space().error().code == ErrorCode::no_space);

    fs.drop("ballast");
    CHECK(db.check_space().ok());
    REQUIRE(db.commit(pair(stored)).ok());
    check_pairs(db, 0, stored + 1);
  }

  // Closed; the disk fills again to under the reserve: a read-write open is refused before
  // RocksDB writes anything, a read-only one still reads everything.
  auto free = fs.free_bytes();
  REQUIRE(free > 4 * MiB);
  fs.ballast("ballast", free - 4 * MiB);
  auto refused = RocksDbBackend::open(fs / "db", Durability::process, OpenMode::read_write,
                                      with_reserve("8MiB"));
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == ErrorCode::no_space);
  CHECK(refused.error().message.find("for writing") != std::string::npos);
  CHECK(refused.error().message.find("`dorm inspect` still reads the store") != std::string::npos);
  {
    auto reader = RocksDbBackend::open(fs / "db", Durability::process, OpenMode::read_only);
    REQUIRE(reader.ok());
    check_pairs(**reader, 0, stored + 1);
  }
  fs.drop("ballast");
  auto reopened = RocksDbBackend::open(fs / "db", Durability::process, OpenMode::read_write,
                                       with_reserve("8MiB"));
  REQUIRE(reopened.ok());
  check_pairs(**reopened, 0, stored + 1);
}

TEST_CASE("full disk, reserve=0: the store fails the commit (no abort) and resumes once space is freed") {
  dorm::testing::TmpfsMount fs(32 * MiB);
  fs.ballast("ballast", 16 * MiB);
  std::int64_t now = 0;  // a resume that failed is tried again a second later
  auto tuning = with_reserve("0");
  tuning.now = [&now] { return now; };
  auto opened = RocksDbBackend::open(fs / "db", Durability::process, OpenMode::read_write, tuning);
  REQUIRE(opened.ok());
  auto& db = **opened;
  auto [stored, error] = fill(db);
  CHECK(stored > 10);
  CHECK(error.code == ErrorCode::no_space);
  check_pairs(db, 0, stored);
  check_absent(db, stored);
  // Stopped by the full disk: writes keep failing until space comes back.
  CHECK(db.commit(pair(stored)).error().code == ErrorCode::no_space);

  fs.drop("ballast");
  // Within a second of the failed attempt the answer is that failure, without trying.
  CHECK(db.check_space().error().code == ErrorCode::no_space);
  now += 1000;
  REQUIRE(db.check_space().ok());  // resumed here
  REQUIRE(db.commit(pair(stored)).ok());
  check_pairs(db, 0, stored + 1);
}
