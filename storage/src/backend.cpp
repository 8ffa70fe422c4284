#include "dorm/storage/backend.hpp"

namespace dorm::storage {

std::string_view to_string(Durability d) noexcept {
  switch (d) {
    case Durability::process: return "process";
    case Durability::fsync: return "fsync";
  }
  return "unknown";
}

std::string_view to_string(OpenMode m) noexcept {
  switch (m) {
    case OpenMode::read_write: return "read-write";
    case OpenMode::read_only: return "read-only";
  }
  return "unknown";
}

Result<CopyStats> Backend::backup_to(const std::string& path) {
  return Error{ErrorCode::not_supported, describe() + " cannot make a backup (its backend has no "
                                                      "backup_to): nothing was written to '" +
                                             path + "'"};
}

Result<void> Backend::commit_leased(const WriteBatch&, std::string_view, std::uint64_t) {
  return Error{ErrorCode::not_supported,
               describe() + " has no leases: only one process may serve it, and its commits "
                            "need no fencing token"};
}

std::optional<std::string> ScanOptions::prefix_successor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xFF) s.pop_back();
  if (s.empty()) return std::nullopt;
  s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

ScanOptions ScanOptions::with_prefix(std::string_view prefix) {
  ScanOptions options;
  options.start = std::string(prefix);
  options.end = prefix_successor(prefix);
  return options;
}

Result<void> ScanOptions::validate() const {
  if (end && *end < start) {
    return Error{ErrorCode::invalid_argument, "scan range end precedes its start"};
  }
  return {};
}

ScanOptions::Bounds ScanOptions::bounds() const {
  Bounds b{start, end};
  if (!start_after) return b;
  if (!reverse) {
    // The smallest key greater than k is k followed by one 0x00 byte.
    std::string after = *start_after + '\0';
    if (after > b.lower) b.lower = std::move(after);
  } else if (!b.upper || *start_after < *b.upper) {
    b.upper = *start_after;
  }
  return b;
}

}  // namespace dorm::storage
