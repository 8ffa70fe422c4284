#include "paging.hpp"

#include <cassert>

#include "dorm/hex.hpp"

namespace dorm::mcp::detail {

std::string to_cursor(std::string_view key) {
  assert(key.size() <= kMaxCursorKeyBytes);
  return hex_encode(key);
}

std::optional<std::string> from_cursor(std::string_view cursor) {
  if (cursor.empty() || cursor.size() > 2 * kMaxCursorKeyBytes) return std::nullopt;
  return hex_decode(cursor);
}

Result<std::optional<std::string>> walk_page(
    std::size_t count, std::optional<std::string_view> cursor, std::size_t page_size,
    const std::function<std::optional<std::string_view>(std::size_t)>& key,
    const std::function<void(std::size_t)>& write) {
  std::size_t start = 0;
  if (cursor) {
    auto wanted = from_cursor(*cursor);
    bool found = false;
    for (std::size_t i = 0; wanted && i < count; ++i) {
      if (key(i) == std::optional<std::string_view>(*wanted)) {
        start = i;
        found = true;
        break;
      }
    }
    if (!found) return Error{ErrorCode::invalid_argument, "invalid cursor"};
  }
  if (page_size == 0) page_size = 1;
  std::size_t listed = 0;
  for (std::size_t i = start; i < count; ++i) {
    auto k = key(i);
    if (!k) continue;
    if (listed == page_size) return std::optional<std::string>(to_cursor(*k));
    write(i);
    ++listed;
  }
  return std::optional<std::string>();
}

}  // namespace dorm::mcp::detail
