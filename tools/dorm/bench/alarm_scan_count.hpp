// AlarmScanCount — a Backend decorator for `dorm bench runtime` that counts scans of the
// alarm index: the alarm scheduler's reads of it (nothing else in these benchmarks reads
// it), to show how often alarm work reaches the store.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "dorm/runtime/keys.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::bench {

class AlarmScanCount final : public storage::BackendWrapper {
 public:
  explicit AlarmScanCount(storage::Backend& target)
      : storage::BackendWrapper(target), prefix_(keys::index_prefix(keys::kAlarmIndex)) {}
  Result<std::vector<storage::KeyValue>> scan(const storage::ScanOptions& options) override {
    if (options.start.starts_with(prefix_)) scans_.fetch_add(1);
    return storage::BackendWrapper::scan(options);
  }
  std::uint64_t scans() const { return scans_.load(); }

 private:
  std::string prefix_;
  std::atomic<std::uint64_t> scans_{0};
};

}  // namespace dorm::bench
