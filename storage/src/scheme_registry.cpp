#include "scheme_registry.hpp"

#include <map>
#include <mutex>
#include <shared_mutex>

namespace dorm::storage {
namespace {

// Matches what the parser can tell apart: a scheme ends at the first ':', and URIs are
// case-sensitive here (ROCKSDB: is not rocksdb:), so one case only.
constexpr std::size_t kMaxSchemeName = 32;

class SchemeRegistry {
 public:
  static SchemeRegistry& instance() {
    // Built at first use, so a registration from a static initialiser of another
    // translation unit finds it constructed; never destroyed, so a store opened while
    // the process exits still finds it.
    static auto* registry = new SchemeRegistry;
    return *registry;
  }

  Result<void> add(std::string_view name, StorageSchemeFactory factory) {
    std::unique_lock lock(mutex_);
    if (!factories_
             .emplace(std::string(name),
                      std::make_shared<const StorageSchemeFactory>(std::move(factory)))
             .second) {
      return Error{ErrorCode::invalid_argument,
                   "storage scheme '" + std::string(name) + "' is registered already"};
    }
    return {};
  }

  std::shared_ptr<const StorageSchemeFactory> find(std::string_view name) const {
    std::shared_lock lock(mutex_);
    auto it = factories_.find(name);
    return it == factories_.end() ? nullptr : it->second;
  }

  std::vector<std::string> names() const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, factory] : factories_) out.push_back(name);
    return out;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const StorageSchemeFactory>, std::less<>> factories_;
};

// Why `name` cannot be a scheme; empty when it can.
std::string refuse_scheme_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSchemeName) {
    return "must be 1-" + std::to_string(kMaxSchemeName) + " characters long";
  }
  if (name[0] < 'a' || name[0] > 'z') return "must start with a lower-case letter";
  for (char c : name) {
    bool allowed =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
    if (!allowed) return "may hold only lower-case letters, digits, '+', '-' and '.'";
  }
  if (name == "rocksdb" || name == "sqlite" || name == "memory") {
    return "is built in (rocksdb, sqlite and memory cannot be replaced)";
  }
  return {};
}

}  // namespace

Result<void> register_storage_scheme(std::string_view name, StorageSchemeFactory factory) {
  if (auto why = refuse_scheme_name(name); !why.empty()) {
    return Error{ErrorCode::invalid_argument, "storage scheme '" + std::string(name) + "' " + why};
  }
  if (!factory) {
    return Error{ErrorCode::invalid_argument,
                 "storage scheme '" + std::string(name) + "' needs a factory"};
  }
  return SchemeRegistry::instance().add(name, std::move(factory));
}

std::vector<std::string> registered_storage_schemes() {
  return SchemeRegistry::instance().names();
}

namespace detail {

std::shared_ptr<const StorageSchemeFactory> find_storage_scheme(std::string_view name) {
  return SchemeRegistry::instance().find(name);
}

}  // namespace detail
}  // namespace dorm::storage
