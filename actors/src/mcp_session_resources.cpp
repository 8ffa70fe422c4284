// Resource subscriptions of one session (resources/subscribe and /unsubscribe), the
// notifications/resources/updated they lead to, and the runtime index that lets anyone
// find a resource's subscribers (dorm/actors/resource_updates.hpp).
//
// A subscription is a key of the session (s/<uri>) plus an index entry, written in the
// subscribing request's batch and removed together (unsubscribe, DELETE, TTL), so a
// subscription made before a crash still gets its updates after it.
#include "mcp_session.hpp"
#include "dorm/actors/resource_updates.hpp"

#include "mcp_session_internal.hpp"

#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/feature_methods.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;

namespace {

constexpr std::size_t kScanPage = 1024;



// <uri> NUL <session object id>: a subscriber scan of one uri is one prefix.
std::string subscriber_entry(std::string_view uri, std::string_view session_object_id) {
  std::string key(uri);
  key += '\0';
  key += session_object_id;
  return key;
}

// The session object ids subscribed to `uri`, from the index.
Result<std::vector<std::string>> subscribers(const Runtime& runtime, std::string_view uri) {
  const std::string prefix = subscriber_entry(uri, "");
  std::vector<std::string> out;
  std::string start = prefix;
  for (;;) {
    auto page = runtime.scan_index(kResourceSubscribersIndex, start, kScanPage);
    if (!page) return std::move(page).error();
    for (const auto& kv : *page) {
      if (kv.key.compare(0, prefix.size(), prefix) != 0) return out;
      out.push_back(kv.key.substr(prefix.size()));
    }
    if (page->size() < kScanPage) return out;
    start = page->back().key + '\0';  // just after the last entry
  }
}

}  // namespace

Result<std::size_t> notify_resource_updated(Runtime& runtime, std::string_view uri) {
  auto ids = subscribers(runtime, uri);
  if (!ids) return std::move(ids).error();
  std::size_t told = 0;
  for (const auto& text : *ids) {
    auto id = runtime.parse_id(kMcpSessionNamespace, text);
    if (!id) continue;  // not written by a session: ignore it
    auto handle = runtime.get(*id);
    if (!handle) return std::move(handle).error();
    runtime.send(*handle, mcp::ResourceUpdated{std::string(uri)});
    ++told;
  }
  return told;
}

std::string McpSession::subscribe(const Message& request, bool on) {
  rapidjson::Document params;
  const rapidjson::Value* uri = parse_params(request, params) ? member(params, "uri") : nullptr;
  const char* method = on ? "resources/subscribe" : "resources/unsubscribe";
  if (!uri || !uri->IsString() || uri->GetStringLength() == 0) {
    return mcp::error_response(request.id, mcp::kInvalidParams,
                               std::string(method) + " needs params.uri (a non-empty string)");
  }
  std::string_view text(uri->GetString(), uri->GetStringLength());
  if (text.size() > kMaxSubscribedUriBytes || text.find('\0') != std::string_view::npos) {
    return mcp::error_response(request.id, mcp::kInvalidParams,
                               "a subscribed uri must be at most " +
                                   std::to_string(kMaxSubscribedUriBytes) +
                                   " bytes without NUL characters");
  }
  if (on && !(options_.resources && options_.resources->contains(text))) {
    rapidjson::StringBuffer data;
    JsonWriter w(data);
    w.StartObject();
    w.Key("uri");
    w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
    w.EndObject();
    return mcp::error_response(request.id, mcp::kResourceNotFound,
                               "no resource has the uri " + std::string(text), data.GetString());
  }
  const std::string entry = subscriber_entry(text, id().to_string());
  if (on) {
    put(session_keys::subscription(text), "").value_or_throw();
    index_put(kResourceSubscribersIndex, entry, "").value_or_throw();
  } else {
    del(session_keys::subscription(text)).value_or_throw();
    index_del(kResourceSubscribersIndex, entry).value_or_throw();
  }
  return mcp::result_response(*request.id, "{}");
}

void McpSession::on_resource_updated(const mcp::ResourceUpdated& update) {
  if (!meta_) {
    // The session is gone but its index entry was not (an older build, or a torn
    // delete): drop the entry so nobody tells this id again.
    index_del(kResourceSubscribersIndex, subscriber_entry(update.uri, id().to_string())).value_or_throw();
    return dispose_empty();
  }
  if (!get(session_keys::subscription(update.uri)).value_or_throw()) return;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("uri");
  w.String(update.uri.data(), static_cast<rapidjson::SizeType>(update.uri.size()));
  w.EndObject();
  emit_standalone(mcp::notification("notifications/resources/updated", buffer.GetString()));
}

void McpSession::tell_subscribers(std::string_view uri) {
  for (const auto& text : subscribers(runtime(), uri).value_or_throw()) {
    auto parsed = runtime().parse_id(kMcpSessionNamespace, text);
    if (!parsed) continue;
    // Behind the output gate, like everything a turn sends.
    send(runtime().get(*parsed).value_or_throw(), mcp::ResourceUpdated{std::string(uri)});
  }
}

void McpSession::erase_subscriptions() {
  ListOptions options;
  options.prefix = std::string(session_keys::kSubscriptions);
  for (const auto& kv : list(options).value_or_throw()) {
    auto uri = session_keys::parse_subscription(kv.key).value_or("");
    index_del(kResourceSubscribersIndex, subscriber_entry(uri, id().to_string())).value_or_throw();
  }
}

}  // namespace dorm::actors
