// DurationHistogram (bucket edges, counts from many threads) and MeteredBackend (commits
// timed and measured, failures counted, everything else passed through).
#include "dorm/storage/metered_backend.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <thread>
#include <vector>

#include "dorm/storage/faulty_backend.hpp"
#include "dorm/storage/memory_backend.hpp"

using dorm::DurationHistogram;
using dorm::storage::FaultyBackend;
using dorm::storage::MemoryBackend;
using dorm::storage::MeteredBackend;
using dorm::storage::WriteBatch;
using namespace std::chrono_literals;

TEST_CASE("duration histogram: a duration lands in the first bucket whose bound is not below it") {
  DurationHistogram h;
  h.record(0ns);
  h.record(-5ns);  // counted as zero
  h.record(50us);  // on the first bound: its bucket (Prometheus' `le`)
  h.record(50us + 1ns);
  h.record(1ms);
  h.record(10s);
  h.record(11s);  // past the last bound: +Inf
  auto s = h.snapshot();
  CHECK(s.count == 7);
  CHECK(s.buckets[0] == 3);
  CHECK(s.buckets[1] == 1);                                // (50 µs, 100 µs]
  CHECK(s.buckets[4] == 1);                                // (500 µs, 1 ms]
  CHECK(s.buckets[DurationHistogram::kBuckets - 2] == 1);  // (5 s, 10 s]
  CHECK(s.buckets[DurationHistogram::kBuckets - 1] == 1);  // +Inf
  CHECK(s.sum_seconds == doctest::Approx(0.0001 + 1e-9 + 0.001 + 21.0));
  CHECK(DurationHistogram::bound_seconds(0) == doctest::Approx(0.00005));
  CHECK(DurationHistogram::bound_seconds(DurationHistogram::kBuckets - 2) == doctest::Approx(10.0));
  CHECK(std::isinf(DurationHistogram::bound_seconds(DurationHistogram::kBuckets - 1)));
  // Bounds ascend strictly, so every duration has exactly one bucket.
  for (std::size_t i = 1; i < DurationHistogram::kBoundsNs.size(); ++i) {
    CHECK(DurationHistogram::kBoundsNs[i] > DurationHistogram::kBoundsNs[i - 1]);
  }
}

TEST_CASE("duration histogram: records from several threads at once are all counted") {
  DurationHistogram h;
  constexpr int kThreads = 4;
  constexpr int kEach = 10'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kEach; ++i) h.record(std::chrono::microseconds(t * 300 + i % 7));
    });
  }
  for (auto& t : threads) t.join();
  auto s = h.snapshot();
  CHECK(s.count == kThreads * kEach);
  CHECK(std::accumulate(s.buckets.begin(), s.buckets.end(), std::uint64_t{0}) == s.count);
}

TEST_CASE("metered backend: commits are timed, their bytes counted, failures counted apart") {
  MemoryBackend memory;
  FaultyBackend faulty(memory);
  MeteredBackend metered(faulty);
  CHECK(metered.counters().latency.count == 0);

  WriteBatch a;
  a.put("key", "value");  // 8 bytes
  a.del("gone");          // 4 bytes
  REQUIRE(metered.commit(a).ok());
  WriteBatch b;
  b.put("k2", "v2");
  REQUIRE(metered.commit(b).ok());
  auto c = metered.counters();
  CHECK(c.latency.count == 2);
  CHECK(c.committed_bytes == a.byte_size() + b.byte_size());
  CHECK(c.committed_bytes == 16);
  CHECK(c.failed == 0);

  faulty.fail_commit();
  WriteBatch refused;
  refused.put("never", "stored");
  CHECK_FALSE(metered.commit(refused).ok());
  c = metered.counters();
  CHECK(c.latency.count == 3);  // timed too
  CHECK(c.failed == 1);
  CHECK(c.committed_bytes == 16);  // nothing was committed
  CHECK_FALSE(memory.get("never")->has_value());

  // Reads and the rest pass through to the store.
  CHECK(metered.get("key")->value() == "value");
  CHECK(metered.describe() == faulty.describe());
  CHECK(metered.durability() == faulty.durability());
}

TEST_CASE("metered backend: a scale-out node's leased commits are measured too") {
  MemoryBackend memory;
  MeteredBackend metered(memory);
  REQUIRE(metered.leases() == &memory);
  auto grant = memory.acquire("obj", "node", 0, 100);
  REQUIRE(grant.ok());
  WriteBatch w;
  w.put("obj/k", "value");
  REQUIRE(metered.commit_leased(w, "obj", grant->token).ok());
  CHECK(metered.counters().committed_bytes == w.byte_size());
  CHECK(metered.commit_leased(w, "obj", grant->token + 1).error().code == dorm::ErrorCode::fenced);
  CHECK(metered.counters().failed == 1);
  CHECK(metered.counters().latency.count == 2);
}
