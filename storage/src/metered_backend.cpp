#include "dorm/storage/metered_backend.hpp"

#include <chrono>

namespace dorm::storage {

MeteredBackend::Counters MeteredBackend::counters() const {
  Counters out;
  out.latency = latency_.snapshot();
  out.committed_bytes = committed_bytes_.load(std::memory_order_relaxed);
  out.failed = failed_.load(std::memory_order_relaxed);
  return out;
}

Result<void> MeteredBackend::commit(const WriteBatch& batch) {
  return measure(batch, [&] { return target().commit(batch); });
}

Result<void> MeteredBackend::commit_leased(const WriteBatch& batch, std::string_view object,
                                           std::uint64_t token) {
  return measure(batch, [&] { return target().commit_leased(batch, object, token); });
}

template <class Commit>
Result<void> MeteredBackend::measure(const WriteBatch& batch, Commit&& commit) {
  auto started = std::chrono::steady_clock::now();
  auto committed = commit();
  latency_.record(std::chrono::steady_clock::now() - started);
  if (committed) {
    committed_bytes_.fetch_add(batch.byte_size(), std::memory_order_relaxed);
  } else {
    failed_.fetch_add(1, std::memory_order_relaxed);
  }
  return committed;
}

}  // namespace dorm::storage
