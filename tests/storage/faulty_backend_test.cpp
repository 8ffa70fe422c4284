// FaultyBackend: each kind of fault, armed one at a time and drawn from a seeded plan.
#include "dorm/storage/faulty_backend.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "temp_dir.hpp"
#include "numbered.hpp"

using dorm::ErrorCode;
using dorm::storage::FaultPlan;
using dorm::storage::FaultyBackend;
using dorm::storage::MemoryBackend;
using dorm::storage::ScanOptions;
using dorm::storage::WriteBatch;

namespace {
WriteBatch put(std::string key, std::string value = "v") {
  WriteBatch b;
  b.put(key, value);
  return b;
}
}  // namespace

TEST_CASE("faulty: the n-th commit from now fails and applies nothing") {
  MemoryBackend inner;
  FaultyBackend faulty(inner);
  faulty.fail_commit(2);
  CHECK(faulty.commit(put("a")).ok());
  auto second = faulty.commit(put("b"));
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == ErrorCode::io_error);
  CHECK(faulty.commit(put("c")).ok());
  CHECK(inner.get("a")->has_value());
  CHECK_FALSE(inner.get("b")->has_value());
  CHECK(inner.get("c")->has_value());
  CHECK(faulty.counters().failed_commits == 1);
  CHECK(faulty.counters().commits == 3);
}

TEST_CASE("faulty: counts the puts and deletes it passes on, not those of a failed commit") {
  MemoryBackend inner;
  FaultyBackend faulty(inner);
  WriteBatch b;
  b.put("a", "1");
  b.put("b", "2");
  b.del("c");
  b.delete_range("d", "e");
  REQUIRE(faulty.commit(b).ok());
  CHECK(faulty.counters().puts == 2);
  CHECK(faulty.counters().deletes == 2);
  faulty.fail_commit(1);
  REQUIRE_FALSE(faulty.commit(b).ok());
  CHECK(faulty.counters().puts == 2);
  CHECK(faulty.counters().deletes == 2);
}

TEST_CASE("faulty: commit durable, reported failed: the caller sees the failure, a fresh reader the write") {
  dorm::testing::TempDir dir;
  std::string path = dir / "db";
  {
    auto inner = dorm::storage::RocksDbBackend::open(path, dorm::storage::Durability::process);
    REQUIRE(inner.ok());
    FaultyBackend faulty(**inner);
    faulty.fail_commit_after_durable();
    auto r = faulty.commit(put("lost-ack", "written"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("applied durably") != std::string::npos);
    CHECK(faulty.counters().durable_failures == 1);
  }
  // A fresh reader: the store reopened from disk.
  auto reopened = dorm::storage::RocksDbBackend::open(path, dorm::storage::Durability::process);
  REQUIRE(reopened.ok());
  CHECK(*(*reopened)->get("lost-ack") == std::optional<std::string>("written"));
}

TEST_CASE("faulty: failed reads, for every read method, then normal service") {
  MemoryBackend inner;
  REQUIRE(inner.commit(put("k")).ok());
  FaultyBackend faulty(inner);
  faulty.fail_reads(3);
  CHECK(faulty.get("k").error().code == ErrorCode::io_error);
  std::vector<std::string> keys{"k"};
  CHECK_FALSE(faulty.get_many(keys).ok());
  CHECK_FALSE(faulty.scan(ScanOptions{}).ok());
  CHECK(faulty.get("k").ok());
  CHECK(faulty.counters().failed_reads == 3);
  CHECK(faulty.counters().reads == 4);
}

TEST_CASE("faulty: latency is added to every call") {
  MemoryBackend inner;
  FaultPlan plan;
  plan.latency = std::chrono::milliseconds(20);
  FaultyBackend faulty(inner, plan);
  auto start = std::chrono::steady_clock::now();
  REQUIRE(faulty.commit(put("k")).ok());
  REQUIRE(faulty.get("k").ok());
  auto elapsed = std::chrono::steady_clock::now() - start;
  // A lower bound only: sleeping at least the latency is the behaviour under test.
  CHECK(elapsed >= std::chrono::milliseconds(40));
}

TEST_CASE("faulty: rates from a seed give the same faults for the same seed") {
  auto run = [](std::uint64_t seed) {
    MemoryBackend inner;
    FaultPlan plan;
    plan.seed = seed;
    plan.commit_failure_rate = 0.3;
    plan.durable_failure_rate = 0.2;
    plan.read_failure_rate = 0.25;
    FaultyBackend faulty(inner, plan);
    std::string outcome;
    for (int i = 0; i < 200; ++i) {
      auto c = faulty.commit(put(dorm::testing::numbered("k", i)));
      bool applied = inner.get(dorm::testing::numbered("k", i))->has_value();
      outcome += c.ok() ? 'c' : (applied ? 'd' : 'f');
      outcome += faulty.get("k0").ok() ? 'r' : 'x';
    }
    return outcome;
  };
  std::string a = run(7);
  CHECK(a == run(7));
  CHECK(a != run(8));
  // Every kind occurred at a plausible rate (400 draws; far from the bounds for any seed).
  auto count = [&](char c) { return std::count(a.begin(), a.end(), c); };
  CHECK(count('f') > 20);
  CHECK(count('d') > 10);
  CHECK(count('x') > 20);
  CHECK(count('c') > 50);
}
