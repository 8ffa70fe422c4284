// MapToolStorage — a tool's view of session storage (mcp::ToolStorage) as a sorted map,
// for tests of handlers that the registries call with the session's storage.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/mcp/tool.hpp"

namespace dorm::testing {

class MapToolStorage : public mcp::ToolStorage {
 public:
  std::map<std::string, std::string, std::less<>> data;

  Result<std::optional<std::string>> get(std::string_view key) override {
    auto it = data.find(key);
    if (it == data.end()) return std::optional<std::string>{};
    return std::optional<std::string>{it->second};
  }
  Result<void> put(std::string_view key, std::string_view value) override {
    data[std::string(key)] = std::string(value);
    return {};
  }
  Result<bool> del(std::string_view key) override {
    auto it = data.find(key);
    if (it == data.end()) return false;
    data.erase(it);
    return true;
  }
};

}  // namespace dorm::testing
