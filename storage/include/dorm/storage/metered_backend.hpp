// MeteredBackend — a decorator that counts the commits made through it.
//
// `dorm serve` hands the runtime its store through one of these, so every commit the
// server makes (a turn's batch, an alarm, the generation at start) is timed and measured
// in one place, whatever the backend is, and `GET /metrics` reports it
// (docs/operations.md#metrics). Reads pass through untouched. The counters are plain
// atomics; reading them never blocks a commit.
#pragma once

#include <atomic>
#include <cstdint>

#include "dorm/duration_histogram.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::storage {

class MeteredBackend final : public BackendWrapper {
 public:
  // Wraps `target`, which must outlive this object.
  explicit MeteredBackend(Backend& target) : BackendWrapper(target) {}

  struct Counters {
    // Every commit call, from its start to its return, failed ones included.
    DurationHistogram::Snapshot latency;
    // Key and value bytes of the batches that committed (WriteBatch::byte_size).
    std::uint64_t committed_bytes = 0;
    // Commits that returned an error (their time is in `latency` too).
    std::uint64_t failed = 0;
  };
  Counters counters() const;

  // Times the commit and counts its bytes (if it succeeded) or its failure.
  Result<void> commit(const WriteBatch& batch) override;
  // The same for a scale-out node's leased commits.
  Result<void> commit_leased(const WriteBatch& batch, std::string_view object,
                             std::uint64_t token) override;

 private:
  template <class Commit>
  Result<void> measure(const WriteBatch& batch, Commit&& commit);
  DurationHistogram latency_;
  std::atomic<std::uint64_t> committed_bytes_{0};
  std::atomic<std::uint64_t> failed_{0};
};

}  // namespace dorm::storage
