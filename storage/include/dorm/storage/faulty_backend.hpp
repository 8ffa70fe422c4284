// FaultyBackend — a decorator that makes any backend fail on purpose.
//
// Tests of everything above storage need the failures a real store produces: a commit
// that fails and applies nothing, a commit that was applied durably but whose success was
// never reported (a lost acknowledgement), reads that fail, and slow calls. Faults come
// from a plan with rates drawn from a seeded generator (the same seed and the same call
// sequence give the same faults), or are armed one at a time ("fail the 3rd commit from
// now"). Armed faults take precedence over rates. With no plan and nothing armed it
// forwards every call unchanged, and so passes the conformance kit.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

#include "dorm/storage/backend.hpp"

namespace dorm::storage {

struct FaultPlan {
  std::uint64_t seed = 0;
  double commit_failure_rate = 0;   // commits that fail with io_error, applying nothing
  double durable_failure_rate = 0;  // commits applied durably, then reported as io_error
  double read_failure_rate = 0;     // get/get_many/scan calls that fail with io_error
  std::chrono::microseconds latency{0};  // added before every call
};

class FaultyBackend final : public BackendWrapper {
 public:
  // Wraps `target`, which must outlive this object.
  FaultyBackend(Backend& target, FaultPlan plan = {});
  // Wraps and owns `target`.
  FaultyBackend(std::unique_ptr<Backend> target, FaultPlan plan = {});

  // The n-th commit from now (1 = the next one) fails and applies nothing.
  void fail_commit(std::uint64_t n = 1);
  // The n-th commit from now is applied durably, then reported as failed.
  void fail_commit_after_durable(std::uint64_t n = 1);
  // The next `count` reads (get, get_many, scan) fail.
  void fail_reads(std::uint64_t count = 1);
  // While `full`, the store behaves as one whose disk is full: check_space() answers
  // no_space and every commit fails with no_space and applies nothing; reads go on.
  void set_no_space(bool full);
  // Replaces the plan and reseeds the generator; armed faults stay armed.
  void set_plan(FaultPlan plan);

  struct Counters {
    std::uint64_t commits = 0;           // commit calls
    std::uint64_t failed_commits = 0;    // reported failed, nothing applied
    std::uint64_t durable_failures = 0;  // reported failed, applied
    std::uint64_t reads = 0;             // read calls
    std::uint64_t scans = 0;             // scan calls (also counted in reads)
    std::uint64_t failed_reads = 0;
    std::uint64_t no_space_commits = 0;  // refused while set_no_space(true)
    // Operations of the batches passed on to the wrapped backend (a delete_range counts
    // once in `deletes`): what a workload costs the store, for tests that count it.
    std::uint64_t puts = 0;
    std::uint64_t deletes = 0;
  };
  Counters counters() const;

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override;
  Result<void> commit(const WriteBatch& batch) override;
  Result<void> check_space() override;
  std::string describe() const override;

 private:
  enum class CommitFault { none, fail, durable_then_fail };
  CommitFault next_commit_fault();
  bool next_read_fails();
  void delay() const;
  Error no_space_error() const;

  std::unique_ptr<Backend> owned_;  // null when the target is borrowed
  mutable std::mutex mutex_;
  FaultPlan plan_;
  std::mt19937_64 rng_;
  std::uint64_t fail_commit_at_ = 0;      // commit number (1-based) that fails, 0 = none
  std::uint64_t durable_fail_at_ = 0;     // commit number that is durable but fails
  std::uint64_t reads_to_fail_ = 0;
  bool no_space_ = false;
  Counters counters_;
};

}  // namespace dorm::storage
