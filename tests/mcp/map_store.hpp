// MapStore — a session's storage (mcp::SessionStore) as a sorted map, for tests of the
// protocol code over storage (the runtime's own storage has its own tests). Rejects values
// over the value limit, as the runtime does.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/event_log.hpp"

namespace dorm::testing {

class MapStore : public mcp::SessionStore {
 public:
  std::map<std::string, std::string, std::less<>> data;
  std::size_t max_value = 128 * 1024;

  Result<std::optional<std::string>> get(std::string_view key) override {
    auto it = data.find(key);
    if (it == data.end()) return std::optional<std::string>{};
    return std::optional<std::string>{it->second};
  }
  Result<void> put(std::string_view key, std::string_view value) override {
    if (value.size() > max_value) return Error{ErrorCode::limit_exceeded, "value too large"};
    data[std::string(key)] = std::string(value);
    return {};
  }
  Result<bool> del(std::string_view key) override {
    auto it = data.find(key);
    if (it == data.end()) return false;
    data.erase(it);
    return true;
  }
  Result<std::vector<storage::KeyValue>> list(std::string_view prefix, std::string_view start,
                                              std::size_t limit) override {
    std::vector<storage::KeyValue> out;
    auto it = data.lower_bound(start.empty() ? prefix : std::max(prefix, start));
    for (; it != data.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (limit && out.size() == limit) break;
      out.push_back({it->first, it->second});
    }
    return out;
  }
  std::size_t count(std::string_view prefix) const {
    std::size_t n = 0;
    for (const auto& [k, v] : data) n += k.compare(0, prefix.size(), prefix) == 0;
    return n;
  }
};

}  // namespace dorm::testing
