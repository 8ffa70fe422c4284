#include "dorm/storage/fenced_backend.hpp"

#include <mutex>

namespace dorm::storage {
namespace {
Error fenced_error(const Backend& b) {
  return Error{ErrorCode::fenced, "this handle to " + b.describe() +
                                      " was fenced: its runtime stopped and a newer one may own the store"};
}
}  // namespace

void FencedBackend::fence() {
  std::unique_lock lock(mutex_);
  fenced_ = true;
}

bool FencedBackend::fenced() const {
  std::shared_lock lock(mutex_);
  return fenced_;
}

Result<std::optional<std::string>> FencedBackend::get(std::string_view key) {
  std::shared_lock lock(mutex_);
  if (fenced_) return fenced_error(*this);
  return BackendWrapper::get(key);
}

Result<std::vector<std::optional<std::string>>> FencedBackend::get_many(
    std::span<const std::string> keys) {
  std::shared_lock lock(mutex_);
  if (fenced_) return fenced_error(*this);
  return BackendWrapper::get_many(keys);
}

Result<std::vector<KeyValue>> FencedBackend::scan(const ScanOptions& options) {
  std::shared_lock lock(mutex_);
  if (fenced_) return fenced_error(*this);
  return BackendWrapper::scan(options);
}

Result<void> FencedBackend::commit(const WriteBatch& batch) {
  std::shared_lock lock(mutex_);
  if (fenced_) return fenced_error(*this);
  return BackendWrapper::commit(batch);
}

Result<void> FencedBackend::commit_leased(const WriteBatch& batch, std::string_view object,
                                          std::uint64_t token) {
  std::shared_lock lock(mutex_);
  if (fenced_) return fenced_error(*this);
  return BackendWrapper::commit_leased(batch, object, token);
}

Result<CopyStats> FencedBackend::backup_to(const std::string& path) {
  std::shared_lock lock(mutex_);
  if (fenced_) return fenced_error(*this);
  return BackendWrapper::backup_to(path);
}

}  // namespace dorm::storage
