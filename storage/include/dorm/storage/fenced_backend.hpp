// FencedBackend — a handle to a backend that can be cut off for good.
//
// A runtime reaches its store only through one of these. When the runtime dies abruptly
// (a simulated crash) its handle is fenced: from then on every call through it fails with
// `fenced`, so work still in flight in the dead runtime cannot write after its successor
// has started over the same backend. A call that was already inside the backend when the
// fence went up completes; fence() waits for such calls to finish, so once it returns no
// write through this handle can land.
#pragma once

#include <shared_mutex>

#include "dorm/storage/backend.hpp"

namespace dorm::storage {

class FencedBackend final : public BackendWrapper {
 public:
  explicit FencedBackend(Backend& target) : BackendWrapper(target) {}

  // Fences the handle; returns once no call is inside the backend any more. Idempotent.
  void fence();
  bool fenced() const;

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override;
  Result<void> commit(const WriteBatch& batch) override;
  Result<CopyStats> backup_to(const std::string& path) override;
  Result<void> commit_leased(const WriteBatch& batch, std::string_view object,
                             std::uint64_t token) override;

 private:
  // Calls hold it shared; fence() takes it exclusively to wait them out.
  mutable std::shared_mutex mutex_;
  bool fenced_ = false;
};

}  // namespace dorm::storage
