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
  apply_locked(batch);
  return {};
}

void MemoryBackend::apply_locked(const WriteBatch& batch) {
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
}

Result<void> MemoryBackend::commit_leased(const WriteBatch& batch, std::string_view object,
                                          std::uint64_t token) {
  if (auto ok = batch.validate(); !ok) return ok;
  std::unique_lock lock(mutex_);
  auto it = leases_.find(object);
  if (it == leases_.end() || it->second.token != token) {
    return Error{ErrorCode::fenced, "memory: the lease of this object moved on (fencing token " +
                                        std::to_string(token) + " is not current)"};
  }
  apply_locked(batch);
  return {};
}

LeaseHolder MemoryBackend::holder_locked(const std::string& object) const {
  const auto& lease = leases_.at(object);
  auto node = nodes_.find(lease.node);
  if (node == nodes_.end()) return LeaseHolder{lease.node, {}, lease.token, lease.expires_ms, 0};
  return LeaseHolder{lease.node, node->second.address, lease.token, lease.expires_ms,
                     node->second.heartbeat_ms};
}

Result<LeaseGrant> MemoryBackend::acquire(std::string_view object, std::string_view node,
                                          std::int64_t now_ms, std::int64_t expires_ms) {
  if (object.empty() || node.empty() || expires_ms <= now_ms) {
    return Error{ErrorCode::invalid_argument,
                 "a lease needs an object, a node and an expiry after now"};
  }
  std::unique_lock lock(mutex_);
  auto it = leases_.find(object);
  if (it != leases_.end() && it->second.node != node && it->second.expires_ms > now_ms) {
    return LeaseGrant{0, holder_locked(it->first)};
  }
  Lease lease{std::string(node), ++last_token_, expires_ms};
  leases_.insert_or_assign(std::string(object), lease);
  return LeaseGrant{lease.token, std::nullopt};
}

Result<std::vector<std::string>> MemoryBackend::renew(std::string_view node,
                                                      std::span<const HeldLease> held,
                                                      std::int64_t expires_ms) {
  std::vector<std::string> lost;
  std::unique_lock lock(mutex_);
  for (const auto& h : held) {
    auto it = leases_.find(h.object);
    if (it == leases_.end() || it->second.token != h.token || it->second.node != node) {
      lost.push_back(h.object);
    } else {
      it->second.expires_ms = expires_ms;
    }
  }
  return lost;
}

Result<void> MemoryBackend::release(std::string_view object, std::uint64_t token) {
  std::unique_lock lock(mutex_);
  if (auto it = leases_.find(object); it != leases_.end() && it->second.token == token) {
    leases_.erase(it);
  }
  return {};
}

Result<std::optional<LeaseHolder>> MemoryBackend::holder(std::string_view object) {
  std::shared_lock lock(mutex_);
  auto it = leases_.find(object);
  if (it == leases_.end()) return std::optional<LeaseHolder>{};
  return std::optional<LeaseHolder>{holder_locked(it->first)};
}

Result<void> MemoryBackend::announce(const NodeRecord& node) {
  if (node.node.empty()) return Error{ErrorCode::invalid_argument, "a node needs an id"};
  std::unique_lock lock(mutex_);
  nodes_.insert_or_assign(node.node, node);
  return {};
}

Result<std::vector<NodeRecord>> MemoryBackend::nodes() {
  std::shared_lock lock(mutex_);
  std::vector<NodeRecord> out;
  for (const auto& [id, record] : nodes_) out.push_back(record);
  return out;
}

Result<void> MemoryBackend::retire(std::string_view node) {
  std::unique_lock lock(mutex_);
  if (auto it = nodes_.find(node); it != nodes_.end()) nodes_.erase(it);
  std::erase_if(leases_, [&](const auto& entry) { return entry.second.node == node; });
  return {};
}

}  // namespace dorm::storage
