// Pages and cursors, shared by the tool, resource and prompt registries (private to mcp/src).
//
// A registry lists its items in registration order, a page at a time. A cursor names the
// first item of the next page by its key (a tool's or prompt's name, a resource's URI, a
// template's text), hex-encoded: opaque to clients, stable while the registry does not
// change (it never does after start-up), and checkable: a cursor that does not decode, or
// names no item the caller may see, is refused.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::mcp::detail {

// Keys longer than this cannot be named by a cursor, so registries refuse them at add().
// URIs are the longest keys; 2 KiB is the length browsers and proxies have long accepted,
// ample for a resource URI.
inline constexpr std::size_t kMaxCursorKeyBytes = 2048;

// The cursor naming `key`. Precondition: key.size() <= kMaxCursorKeyBytes.
std::string to_cursor(std::string_view key);

// The key `cursor` names; nullopt when it is not a cursor to_cursor() can produce.
std::optional<std::string> from_cursor(std::string_view cursor);

// Walks one page over `count` items in order. `key(i)` is item i's key, or nullopt when
// item i is hidden from this caller (it is neither listed nor named by a cursor);
// `write(i)` lists item i. The page starts at the item `cursor` names (the first item
// without a cursor) and lists at most `page_size` items (at least 1).
// Returns the cursor of the first item left over (nullopt: the listing is complete).
// Errors: invalid_argument "invalid cursor" when `cursor` names no visible item; nothing
// was written then.
Result<std::optional<std::string>> walk_page(
    std::size_t count, std::optional<std::string_view> cursor, std::size_t page_size,
    const std::function<std::optional<std::string_view>(std::size_t)>& key,
    const std::function<void(std::size_t)>& write);

}  // namespace dorm::mcp::detail
