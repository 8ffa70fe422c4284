#include "dorm/storage/memory_backend.hpp"

#include "dorm/storage/map_scan.hpp"

#include <mutex>

namespace dorm::storage {

Result<std::optional<std::string>> MemoryBackend::get(std::string_view key) {
  std::shared_lock lock(mutex_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::optional<std::string>{};
  return std::optional<std::string>{it->second};
}

Result<std::vector<std::optional<std::string>>> MemoryBackend::get_many(
    std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  std::shared_lock lock(mutex_);
  for (const auto& key : keys) {
    auto it = data_.find(key);
    out.push_back(it == data_.end() ? std::nullopt : std::optional<std::string>{it->second});
  }
  return out;
}

Result<std::vector<KeyValue>> MemoryBackend::scan(const ScanOptions& options) {
  std::shared_lock lock(mutex_);
  return scan_ordered_map(data_, options);
}

Result<void> MemoryBackend::commit(const WriteBatch& batch) {
  if (auto ok = batch.validate(); !ok) return ok;
  std::unique_lock lock(mutex_);
  for (const auto op : batch.ops()) {
    switch (op.kind) {
      case WriteBatch::Kind::put: data_.insert_or_assign(std::string(op.key), op.value); break;
      case WriteBatch::Kind::del:
        if (auto it = data_.find(op.key); it != data_.end()) data_.erase(it);
        break;
      case WriteBatch::Kind::delete_range:
        data_.erase(data_.lower_bound(op.key), data_.lower_bound(op.value));
        break;
    }
  }
  return {};
}

}  // namespace dorm::storage
