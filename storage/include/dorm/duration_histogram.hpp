// DurationHistogram — how long something took, counted into fixed buckets without a lock.
//
// The layers below the server (storage commits, runtime turns) count what they do in plain
// atomics and leave exposing them to the top (`GET /metrics`, actors/server_metrics.hpp),
// so no layer depends on a metrics library. This is their histogram: record() costs a few
// relaxed atomic additions and may be called from any thread at once; snapshot() reads the
// counts at any time, from any thread, without stopping the writers.
//
// The bucket bounds are fixed and shared by every histogram, from 50 µs (a commit to an
// in-memory store) to 10 s (a turn stuck behind a slow disk), roughly ×2–×2.5 apart, so
// any two histograms can be compared and summed. A duration equal to a bound counts in
// that bound's bucket (Prometheus' `le`).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace dorm {

class DurationHistogram {
 public:
  // Upper bounds of the finite buckets, in nanoseconds, ascending. One more bucket, +Inf,
  // takes what is longer than the last.
  static constexpr std::array<std::int64_t, 17> kBoundsNs = {
      50'000,      100'000,       250'000,       500'000,       1'000'000,     2'500'000,
      5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000,
      500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
  static constexpr std::size_t kBuckets = kBoundsNs.size() + 1;

  // Counts one duration (a negative one as zero).
  void record(std::chrono::nanoseconds took) noexcept;

  // The counts at one moment. Each bucket is read once, and `count` is their sum, so the
  // +Inf bucket of the cumulative form always equals `count`, as Prometheus requires. The
  // sum is read separately and may lag or lead the counts by the records in flight.
  struct Snapshot {
    std::array<std::uint64_t, kBuckets> buckets{};  // per bucket, not cumulative
    std::uint64_t count = 0;
    double sum_seconds = 0;
  };
  Snapshot snapshot() const noexcept;

  // A bucket's upper bound in seconds (+Inf for the last).
  static double bound_seconds(std::size_t bucket) noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace dorm
