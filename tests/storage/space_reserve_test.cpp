// The space reserve's arithmetic and caching on a scripted filesystem and a virtual clock,
// the `reserve=` URI option, and the RocksDB backend driven by a scripted disk (the real
// full disk is tests/storage/disk_full_test.cpp).
#include "dorm/storage/space_reserve.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/storage_uri.hpp"
#include "temp_dir.hpp"

using dorm::ErrorCode;
using dorm::Result;
using dorm::storage::FilesystemSpace;
using dorm::storage::parse_storage_uri;
using dorm::storage::ReserveSpec;
using dorm::storage::SpaceReserve;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

// A filesystem whose free space the test sets, and a clock the test moves.
struct ScriptedDisk {
  std::uint64_t free = 0;
  std::uint64_t total = 1024 * MiB;
  bool failing = false;
  int probes = 0;
  std::int64_t now = 0;

  SpaceReserve::Probe probe() {
    return [this]() -> Result<FilesystemSpace> {
      ++probes;
      if (failing) return dorm::Error{ErrorCode::io_error, "scripted probe failure"};
      return FilesystemSpace{free, total};
    };
  }
  SpaceReserve::Now clock() {
    return [this] { return now; };
  }
};

}  // namespace

TEST_CASE("reserve spec: sizes, percentages and 0 parse; anything else is a clear error") {
  CHECK(ReserveSpec::parse("0")->disabled());
  CHECK(ReserveSpec::parse("0")->to_string() == "0");
  CHECK(ReserveSpec::parse("128MiB")->bytes == 128 * MiB);
  CHECK(ReserveSpec::parse("64M")->bytes == 64 * MiB);
  CHECK(ReserveSpec::parse("512K")->bytes == 512 * 1024);
  CHECK(ReserveSpec::parse("1G")->bytes == 1024 * MiB);
  CHECK(ReserveSpec::parse("1000")->bytes == 1000);
  CHECK(ReserveSpec::parse("1000B")->bytes == 1000);
  CHECK(ReserveSpec{}.bytes == 128 * MiB);  // the default
  auto percent = ReserveSpec::parse("2.5%");
  REQUIRE(percent.ok());
  CHECK(percent->resolve(1000 * MiB) == 25 * MiB);
  CHECK(!percent->disabled());
  CHECK(ReserveSpec::parse("64M")->resolve(1) == 64 * MiB);  // a size ignores the filesystem

  for (const char* text : {"0", "64MiB", "1GiB", "5%", "2.5%", "1000"}) {
    CAPTURE(text);
    auto spec = ReserveSpec::parse(text);
    REQUIRE(spec.ok());
    CHECK(*ReserveSpec::parse(spec->to_string()) == *spec);
  }
  CHECK(ReserveSpec::parse("64M")->to_string() == "64MiB");

  struct Bad {
    const char* text;
    const char* says;
  };
  for (auto [text, says] : {Bad{"", "empty value"}, Bad{"lots", "does not start with a number"},
                            Bad{"64X", "unknown unit 'X'"}, Bad{"1.5M", "unknown unit '.5M'"},
                            Bad{"-1", "does not start with a number"}, Bad{"0%", "above 0 and below 100"},
                            Bad{"100%", "above 0 and below 100"}, Bad{"x%", "not a number"},
                            Bad{"99999999999999999999", "too large"}, Bad{"20000000000T", "too large"}}) {
    CAPTURE(text);
    auto spec = ReserveSpec::parse(text);
    REQUIRE(!spec.ok());
    CHECK(spec.error().code == ErrorCode::invalid_argument);
    CHECK(spec.error().message.find(says) != std::string::npos);
    CHECK(spec.error().message.find("reserve '" + std::string(text) + "'") != std::string::npos);
  }
}

TEST_CASE("storage URI: reserve= for rocksdb, refused elsewhere, bad values named") {
  auto uri = parse_storage_uri("rocksdb:./data?reserve=64MiB&durability=fsync");
  REQUIRE(uri.ok());
  REQUIRE(uri->reserve.has_value());
  CHECK(uri->reserve->bytes == 64 * MiB);
  CHECK(uri->to_string() == "rocksdb:./data?durability=fsync&reserve=64MiB");
  CHECK(*parse_storage_uri(uri->to_string()) == *uri);
  CHECK(parse_storage_uri("rocksdb:./data?reserve=0")->reserve->disabled());
  CHECK(parse_storage_uri("rocksdb:./data?reserve=10%")->to_string() == "rocksdb:./data?reserve=10%");
  CHECK(!parse_storage_uri("rocksdb:./data")->reserve.has_value());

  auto sqlite = parse_storage_uri("sqlite:x.db?reserve=1M");
  REQUIRE(!sqlite.ok());
  CHECK(sqlite.error().message.find("reserve applies to rocksdb: only") != std::string::npos);
  CHECK(!parse_storage_uri("memory:?reserve=1M").ok());

  auto bad = parse_storage_uri("rocksdb:x?reserve=lots");
  REQUIRE(!bad.ok());
  CHECK(bad.error().code == ErrorCode::invalid_argument);
  CHECK(bad.error().message.find("invalid storage URI 'rocksdb:x?reserve=lots'") != std::string::npos);
  CHECK(bad.error().message.find("reserve 'lots'") != std::string::npos);
  CHECK(!parse_storage_uri("rocksdb:x?reserve=1M&reserve=2M").ok());
}

TEST_CASE("space reserve: admits from the cached figure until its room is used up") {
  ScriptedDisk disk;
  disk.free = 100 * MiB;
  SpaceReserve reserve(64 * MiB, "the store", disk.probe(), disk.clock());
  // The first commit looks; 36 MiB of room above the reserve.
  REQUIRE(reserve.admit(10 * MiB).ok());
  CHECK(disk.probes == 1);
  REQUIRE(reserve.admit(10 * MiB).ok());
  REQUIRE(reserve.admit(10 * MiB).ok());
  CHECK(disk.probes == 1);  // 30 MiB counted: still inside the room, no look
  // 6 MiB of room left by the count; 10 more does not fit: look again before deciding.
  disk.free = 70 * MiB;  // what the counted commits really used
  auto refused = reserve.admit(10 * MiB);
  CHECK(disk.probes == 2);
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == ErrorCode::no_space);
  CHECK(refused.error().message.find("70.0 MiB free") != std::string::npos);
  CHECK(refused.error().message.find("reserve of 64.0 MiB") != std::string::npos);
  CHECK(refused.error().message.find("the store refuses writes") != std::string::npos);
  // A small commit still fits exactly: free - reserve = 6 MiB.
  CHECK(reserve.admit(6 * MiB).ok());
  CHECK(reserve.stats().refusals == 1);
}

TEST_CASE("space reserve: a figure older than the refresh interval is looked at again") {
  ScriptedDisk disk;
  disk.free = 1024 * MiB;
  SpaceReserve reserve(64 * MiB, "the store", disk.probe(), disk.clock());
  REQUIRE(reserve.admit(1).ok());
  CHECK(disk.probes == 1);
  disk.now += SpaceReserve::kRefreshInterval.count() - 1;
  REQUIRE(reserve.admit(1).ok());
  CHECK(disk.probes == 1);
  // Another program (or RocksDB's own flushes) filled the disk meanwhile.
  disk.free = 10 * MiB;
  disk.now += 1;
  CHECK(reserve.admit(1).error().code == ErrorCode::no_space);
  CHECK(disk.probes == 2);
}

TEST_CASE("space reserve: while refusing, every check looks, so writes come back when space does") {
  ScriptedDisk disk;
  disk.free = 10 * MiB;
  SpaceReserve reserve(64 * MiB, "the store", disk.probe(), disk.clock());
  CHECK(!reserve.check().ok());
  CHECK(!reserve.check().ok());
  CHECK(disk.probes == 2);
  disk.free = 65 * MiB;  // an operator freed space; no time has passed
  CHECK(reserve.check().ok());
  CHECK(reserve.admit(1 * MiB).ok());
  CHECK(disk.probes == 3);  // back to the cached figure
  disk.free = 64 * MiB;     // what that commit used
  CHECK(reserve.admit(1).error().code == ErrorCode::no_space);  // room used up: looked, refused
  CHECK(disk.probes == 4);
}

TEST_CASE("space reserve: a failed look admits and is retried; reserve 0 never looks") {
  ScriptedDisk disk;
  disk.free = 1 * MiB;
  disk.failing = true;
  SpaceReserve reserve(64 * MiB, "the store", disk.probe(), disk.clock());
  CHECK(reserve.admit(1).ok());
  CHECK(reserve.admit(1).ok());
  CHECK(disk.probes == 2);
  disk.failing = false;
  CHECK(reserve.admit(1).error().code == ErrorCode::no_space);

  ScriptedDisk unwatched;
  SpaceReserve none(0, "the store", unwatched.probe(), unwatched.clock());
  CHECK(none.admit(1024 * MiB).ok());
  CHECK(unwatched.probes == 0);
}

TEST_CASE("rocksdb on a scripted disk: refused commits change nothing, reads go on, space returns") {
  dorm::testing::TempDir dir;
  ScriptedDisk disk;
  disk.free = 512 * MiB;
  using dorm::storage::RocksDbBackend;
  RocksDbBackend::Tuning tuning;
  tuning.reserve = *ReserveSpec::parse("64MiB");
  tuning.probe = disk.probe();
  tuning.now = disk.clock();
  auto opened = RocksDbBackend::open(dir / "db", dorm::storage::Durability::process,
                                     dorm::storage::OpenMode::read_write, tuning);
  REQUIRE(opened.ok());
  auto& db = **opened;
  dorm::storage::WriteBatch first;
  first.put("a", "1");
  REQUIRE(db.commit(first).ok());
  CHECK(db.check_space().ok());

  // The disk fills behind the store's back; the cached figure is trusted for the refresh
  // interval, then looked at again.
  disk.free = 63 * MiB;
  disk.now += SpaceReserve::kRefreshInterval.count();
  dorm::storage::WriteBatch big;
  big.put("b", "2");
  big.put("c", "3");
  auto refused = db.commit(big);
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == ErrorCode::no_space);
  CHECK(db.check_space().error().code == ErrorCode::no_space);
  CHECK(db.get("a")->value() == "1");
  CHECK(!db.get("b")->has_value());  // nothing of the refused batch
  CHECK(!db.get("c")->has_value());

  disk.free = 512 * MiB;
  CHECK(db.check_space().ok());
  dorm::storage::WriteBatch after;
  after.put("d", "4");
  REQUIRE(db.commit(after).ok());
  CHECK(db.get("d")->value() == "4");
}

TEST_CASE("rocksdb on a scripted disk: a read-write open under the reserve fails and makes nothing") {
  dorm::testing::TempDir dir;
  ScriptedDisk disk;
  disk.free = 10 * MiB;
  using dorm::storage::RocksDbBackend;
  RocksDbBackend::Tuning tuning;
  tuning.probe = disk.probe();  // the default reserve, 128 MiB
  auto opened = RocksDbBackend::open(dir / "db", dorm::storage::Durability::process,
                                     dorm::storage::OpenMode::read_write, tuning);
  REQUIRE(!opened.ok());
  CHECK(opened.error().code == ErrorCode::no_space);
  CHECK(opened.error().message.find("10.0 MiB free") != std::string::npos);
  CHECK(opened.error().message.find("under the reserve of 128.0 MiB (reserve=128MiB") != std::string::npos);
  CHECK(!std::filesystem::exists(dir / "db"));

  tuning.reserve = *ReserveSpec::parse("0");  // no reserve: the open goes ahead
  CHECK(RocksDbBackend::open(dir / "db", dorm::storage::Durability::process,
                             dorm::storage::OpenMode::read_write, tuning)
            .ok());
}
