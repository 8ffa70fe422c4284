// MemoryBackend — an in-memory ordered store (`memory:`), for tests and ephemeral runs.
//
// Everything is lost with the object. Reads share a lock and commits take it exclusively,
// so every read sees whole commits. Durability reports what was asked for at open; neither
// mode survives the process. It keeps leases too (leases.hpp), under the same lock as the
// data, so several runtimes in one process can share one store as nodes do a PostgreSQL
// one: tests of scale-out on a virtual clock.
#pragma once

#include <map>
#include <shared_mutex>

#include "dorm/storage/backend.hpp"

namespace dorm::storage {

class MemoryBackend final : public Backend, public LeaseTable {
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

  LeaseTable* leases() override { return this; }
  Result<void> commit_leased(const WriteBatch& batch, std::string_view object,
                             std::uint64_t token) override;
  Result<LeaseGrant> acquire(std::string_view object, std::string_view node, std::int64_t now_ms,
                             std::int64_t expires_ms) override;
  Result<std::vector<std::string>> renew(std::string_view node, std::span<const HeldLease> held,
                                         std::int64_t expires_ms) override;
  Result<void> release(std::string_view object, std::uint64_t token) override;
  Result<std::optional<LeaseHolder>> holder(std::string_view object) override;
  Result<void> announce(const NodeRecord& node) override;
  Result<std::vector<NodeRecord>> nodes() override;
  Result<void> retire(std::string_view node) override;

 private:
  void apply_locked(const WriteBatch& batch);
  LeaseHolder holder_locked(const std::string& object) const;

  mutable std::shared_mutex mutex_;
  std::map<std::string, std::string, std::less<>> data_;
  struct Lease {
    std::string node;
    std::uint64_t token;
    std::int64_t expires_ms;
  };
  std::map<std::string, Lease, std::less<>> leases_;
  std::map<std::string, NodeRecord, std::less<>> nodes_;
  std::uint64_t last_token_ = 0;
  Durability durability_;
};

}  // namespace dorm::storage
