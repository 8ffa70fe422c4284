// Resource subscriptions across sessions.
//
// A session that subscribes to a resource (resources/subscribe) stores the subscription
// with its own data and puts an entry in the runtime index kResourceSubscribersIndex
// (<uri> NUL <session object id>) in the same batch, so the subscription survives
// eviction and restarts, and whoever changes a resource can find its subscribers without
// activating any session that did not subscribe. notify_resource_updated() is the
// embedder's way to say a resource changed; a tool says it with
// ToolContext::resource_updated().
#pragma once

#include <cstddef>
#include <string_view>

#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

inline constexpr std::string_view kResourceSubscribersIndex = "mcp.subscribers";

// The longest resource URI a session may subscribe to (it is part of the index key).
inline constexpr std::size_t kMaxSubscribedUriBytes = 1024;

// Sends every session subscribed to `uri` a ResourceUpdated message (each then sends the
// client notifications/resources/updated on its standalone stream). Returns how many
// sessions were told. Safe from any thread; reads the index, activates only subscribers.
Result<std::size_t> notify_resource_updated(Runtime& runtime, std::string_view uri);

}  // namespace dorm::actors
