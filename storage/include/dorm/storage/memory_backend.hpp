// MemoryBackend — an in-memory ordered store (`memory:`), for tests and ephemeral runs.
//
// Everything is lost with the object. Reads share a lock and commits take it exclusively,
// so every read sees whole commits. Durability reports what was asked for at open; neither
// mode survives the process.
#pragma once

#include <map>
#include <shared_mutex>

#include "dorm/storage/backend.hpp"

namespace dorm::storage {

class MemoryBackend final : public Backend {
 public:
  explicit MemoryBackend(Durability durability = Durability::process)
      : durability_(durability) {}

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  Result<std::vector<KeyValue>> scan(const ScanOptions& options) override;
  Result<void> commit(const WriteBatch& batch) override;
  Durability durability() const override { return durability_; }
  std::string describe() const override { return "memory:"; }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::string, std::less<>> data_;
  Durability durability_;
};

}  // namespace dorm::storage
