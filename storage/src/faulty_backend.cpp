#include "dorm/storage/faulty_backend.hpp"

#include <thread>

namespace dorm::storage {

FaultyBackend::FaultyBackend(Backend& target, FaultPlan plan)
    : BackendWrapper(target), plan_(plan), rng_(plan.seed) {}

// The base is initialised from *target before owned_ takes the pointer; the object it
// points to does not move.
FaultyBackend::FaultyBackend(std::unique_ptr<Backend> target, FaultPlan plan)
    : BackendWrapper(*target), owned_(std::move(target)), plan_(plan), rng_(plan.seed) {}

void FaultyBackend::fail_commit(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  fail_commit_at_ = counters_.commits + (n == 0 ? 1 : n);
}

void FaultyBackend::fail_commit_after_durable(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  durable_fail_at_ = counters_.commits + (n == 0 ? 1 : n);
}

void FaultyBackend::fail_reads(std::uint64_t count) {
  std::lock_guard lock(mutex_);
  reads_to_fail_ = count;
}

void FaultyBackend::set_no_space(bool full) {
  std::lock_guard lock(mutex_);
  no_space_ = full;
}

Error FaultyBackend::no_space_error() const {
  return Error{ErrorCode::no_space,
               describe() + " refuses writes: its disk is full (injected). Nothing was written"};
}

Result<void> FaultyBackend::check_space() {
  {
    std::lock_guard lock(mutex_);
    if (!no_space_) return BackendWrapper::check_space();
  }
  return no_space_error();
}

void FaultyBackend::set_plan(FaultPlan plan) {
  std::lock_guard lock(mutex_);
  plan_ = plan;
  rng_.seed(plan.seed);
}

FaultyBackend::Counters FaultyBackend::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

FaultyBackend::CommitFault FaultyBackend::next_commit_fault() {
  std::lock_guard lock(mutex_);
  std::uint64_t number = ++counters_.commits;
  CommitFault fault = CommitFault::none;
  if (number == fail_commit_at_) {
    fault = CommitFault::fail;
  } else if (number == durable_fail_at_) {
    fault = CommitFault::durable_then_fail;
  } else {
    // Always draw both numbers, so one rate's setting does not shift the other's sequence.
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    double a = coin(rng_);
    double b = coin(rng_);
    if (a < plan_.commit_failure_rate) {
      fault = CommitFault::fail;
    } else if (b < plan_.durable_failure_rate) {
      fault = CommitFault::durable_then_fail;
    }
  }
  if (fault == CommitFault::fail) ++counters_.failed_commits;
  if (fault == CommitFault::durable_then_fail) ++counters_.durable_failures;
  return fault;
}

bool FaultyBackend::next_read_fails() {
  std::lock_guard lock(mutex_);
  ++counters_.reads;
  bool fails = false;
  if (reads_to_fail_ > 0) {
    --reads_to_fail_;
    fails = true;
  } else {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    fails = coin(rng_) < plan_.read_failure_rate;
  }
  if (fails) ++counters_.failed_reads;
  return fails;
}

void FaultyBackend::delay() const {
  std::chrono::microseconds latency;
  {
    std::lock_guard lock(mutex_);
    latency = plan_.latency;
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
}

namespace {
Error injected(std::string_view what) {
  return Error{ErrorCode::io_error, "injected fault: " + std::string(what)};
}
}  // namespace

Result<std::optional<std::string>> FaultyBackend::get(std::string_view key) {
  delay();
  if (next_read_fails()) return injected("get failed");
  return BackendWrapper::get(key);
}

Result<std::vector<std::optional<std::string>>> FaultyBackend::get_many(
    std::span<const std::string> keys) {
  delay();
  if (next_read_fails()) return injected("get_many failed");
  return BackendWrapper::get_many(keys);
}

Result<std::vector<KeyValue>> FaultyBackend::scan(const ScanOptions& options) {
  delay();
  {
    std::lock_guard lock(mutex_);
    ++counters_.scans;
  }
  if (next_read_fails()) return injected("scan failed");
  return BackendWrapper::scan(options);
}

Result<void> FaultyBackend::commit(const WriteBatch& batch) {
  delay();
  bool full = false;
  {
    std::lock_guard lock(mutex_);
    if (no_space_) {
      ++counters_.commits;
      ++counters_.no_space_commits;
      full = true;
    }
  }
  if (full) return no_space_error();
  auto fault = next_commit_fault();
  if (fault != CommitFault::fail) {
    std::uint64_t puts = 0;
    for (std::size_t i = 0; i < batch.size(); ++i)
      puts += batch.op(i).kind == WriteBatch::Kind::put;
    std::lock_guard lock(mutex_);
    counters_.puts += puts;
    counters_.deletes += batch.size() - puts;
  }
  switch (fault) {
    case CommitFault::fail: return injected("commit failed, nothing applied");
    case CommitFault::durable_then_fail: {
      auto applied = BackendWrapper::commit(batch);
      if (!applied) return applied;
      return injected("commit applied durably but reported as failed");
    }
    case CommitFault::none: break;
  }
  return BackendWrapper::commit(batch);
}

std::string FaultyBackend::describe() const { return "faulty(" + BackendWrapper::describe() + ")"; }

}  // namespace dorm::storage
