// initialize: the session's metadata (negotiated revision, client capabilities and info,
// owner) and the capabilities this server announces.
#include "mcp_session.hpp"
#include "mcp_session_code.hpp"
#include "mcp_session_internal.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/mcp/protocol_version.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;

void McpSession::write_capabilities(JsonWriter& w) const {
  auto flag = [&w](const char* key, bool value) {
    w.Key(key);
    w.Bool(value);
  };
  const bool tools = options_.tools && options_.tools->size() > 0;
  const bool resources = options_.resources && !options_.resources->empty();
  const bool prompts = options_.prompts && !options_.prompts->empty();
  w.StartObject();
  if (tools) {
    w.Key("tools");
    w.StartObject();
    flag("listChanged", false);
    w.EndObject();
  }
  if (resources) {
    w.Key("resources");
    w.StartObject();
    flag("subscribe", options_.resources->supports_subscribe());
    flag("listChanged", false);
    w.EndObject();
  }
  if (prompts) {
    w.Key("prompts");
    w.StartObject();
    flag("listChanged", false);
    w.EndObject();
  }
  // Prompt arguments and template variables are what completion/complete completes.
  if (prompts || (resources && options_.resources->template_count() > 0)) {
    w.Key("completions");
    w.StartObject();
    w.EndObject();
  }
  w.Key("logging");
  w.StartObject();
  w.EndObject();
  w.EndObject();
}

HttpResponse McpSession::initialize(const SessionCall& call) {
  const Message& request = call.messages.at(0);
  if (meta_) {
    // 128 random bits collided, or a replayed call: never overwrite a session.
    return bad_request(request.id, mcp::kInvalidRequest, "session already initialized");
  }
  rapidjson::Document params;
  bool is_object = parse_params(request, params);
  const rapidjson::Value* version = is_object ? member(params, "protocolVersion") : nullptr;
  if (!version || !version->IsString()) {
    return bad_request(request.id, mcp::kInvalidParams,
                       "initialize needs params.protocolVersion (a string)");
  }
  mcp::SessionMeta meta;
  meta.protocol_version = std::string(mcp::negotiate(string_of(*version)));
  for (auto [key, target] : {std::pair{"capabilities", &meta.client_capabilities},
                             std::pair{"clientInfo", &meta.client_info}}) {
    const rapidjson::Value* value = member(params, key);
    if (!value) continue;
    if (!value->IsObject()) {
      return bad_request(request.id, mcp::kInvalidParams,
                         std::string("initialize params.") + key + " must be an object");
    }
    *target = compact(*value);
  }
  meta.owner = call.caller;
  meta.created_ms = clock().now_ms();
  meta_ = std::move(meta);
  store_meta();
  note_activity();
  if (auto* counters = options_.counters) {
    after_commit([counters] { counters->created.fetch_add(1, std::memory_order_relaxed); });
  }

  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("protocolVersion");
  w.String(meta_->protocol_version.c_str());
  w.Key("capabilities");
  write_capabilities(w);
  w.Key("serverInfo");
  w.StartObject();
  w.Key("name");
  w.String(options_.server_name.c_str());
  w.Key("version");
  w.String(options_.server_version.c_str());
  w.EndObject();
  w.EndObject();
  auto res = event_stream({mcp::result_response(*request.id, buffer.GetString())});
  res.headers.emplace_back("Mcp-Session-Id", call.session_id);
  log::info("session_created", {{"session", call.session_id},
                                {"protocol_version", meta_->protocol_version},
                                {"user", call.caller.user}});
  return res;
}

}  // namespace dorm::actors
