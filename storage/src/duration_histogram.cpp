#include "dorm/duration_histogram.hpp"

#include <algorithm>
#include <limits>

namespace dorm {

void DurationHistogram::record(std::chrono::nanoseconds took) noexcept {
  const std::int64_t ns = std::max<std::int64_t>(0, took.count());
  // lower_bound: the first bound >= ns, so a duration equal to a bound lands in its bucket.
  auto it = std::lower_bound(kBoundsNs.begin(), kBoundsNs.end(), ns);
  auto bucket = static_cast<std::size_t>(it - kBoundsNs.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

DurationHistogram::Snapshot DurationHistogram::snapshot() const noexcept {
  Snapshot out;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    out.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
    out.count += out.buckets[i];
  }
  out.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return out;
}

double DurationHistogram::bound_seconds(std::size_t bucket) noexcept {
  if (bucket >= kBoundsNs.size()) return std::numeric_limits<double>::infinity();
  return static_cast<double>(kBoundsNs[bucket]) / 1e9;
}

}  // namespace dorm
