#include "dorm/actors/mcp_session.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <stdexcept>

#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/protocol_version.hpp"
#include "dorm/mcp/request_checks.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {
namespace {

using mcp::HttpResponse;
using mcp::Message;
using mcp::SessionCall;

std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  value.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// A response whose body is an SSE stream of JSON-RPC messages, one `message` event each.
HttpResponse event_stream(const std::vector<std::string>& messages) {
  HttpResponse res;
  res.headers = {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}};
  for (const auto& m : messages) {
    res.body += "event: message\ndata: ";
    res.body += m;
    res.body += "\n\n";
  }
  return res;
}

HttpResponse rejected(const mcp::Rejection& r) { return HttpResponse{r.http_status, r.headers, r.body}; }

HttpResponse bad_request(const std::optional<mcp::RequestId>& id, int code, std::string_view message) {
  return HttpResponse{400, {{"Content-Type", "application/json"}},
                      mcp::error_response(id, code, message)};
}

}  // namespace

void McpSession::on_start(StartReason) {
  auto stored = get(mcp::kSessionMetaKey);
  if (!stored) throw std::runtime_error(stored.error().describe());
  if (!*stored) return;  // no such session (yet): initialize makes one
  auto meta = mcp::SessionMeta::from_json(**stored);
  if (!meta) throw std::runtime_error(meta.error().describe());
  meta_ = std::move(*meta);
}

caf::behavior McpSession::behavior() {
  return {[this](const SessionCall& call) -> HttpResponse { return handle(call); }};
}

HttpResponse McpSession::handle(const SessionCall& call) {
  if (call.kind == SessionCall::Kind::initialize) return initialize(call);
  if (!meta_) return rejected(mcp::Rejection::unknown_session());
  if (!(call.caller == meta_->owner)) {
    // Same answer as for a session that does not exist: the caller learns nothing.
    log::warn("session_owner_mismatch", {{"session", call.session_id},
                                         {"owner_user", meta_->owner.user},
                                         {"owner_org", meta_->owner.org},
                                         {"caller_user", call.caller.user},
                                         {"caller_org", call.caller.org}});
    return rejected(mcp::Rejection::unknown_session());
  }
  switch (call.kind) {
    case SessionCall::Kind::post: return post(call);
    case SessionCall::Kind::remove: return remove();
    case SessionCall::Kind::get: {
      // Standalone SSE streams come with live sinks; until then, say there is none (the
      // spec allows 405, and the SDK client then simply opens no GET stream).
      HttpResponse res{405, {{"Allow", "POST, DELETE"}, {"Content-Type", "application/json"}},
                       mcp::error_response(std::nullopt, mcp::kTransportError,
                                           "this server offers no standalone SSE stream")};
      return res;
    }
    case SessionCall::Kind::initialize: break;
  }
  return rejected(mcp::Rejection::unknown_session());
}

HttpResponse McpSession::initialize(const SessionCall& call) {
  const Message& request = call.messages.at(0);
  if (meta_) {
    // 128 random bits collided, or a replayed call: never overwrite a session.
    return bad_request(request.id, mcp::kInvalidRequest, "session already initialized");
  }
  rapidjson::Document params;
  params.Parse(request.params.empty() ? "{}" : request.params.c_str());
  auto version = params.IsObject() ? params.FindMember("protocolVersion") : params.MemberEnd();
  if (!params.IsObject() || version == params.MemberEnd() || !version->value.IsString()) {
    return bad_request(request.id, mcp::kInvalidParams,
                       "initialize needs params.protocolVersion (a string)");
  }
  mcp::SessionMeta meta;
  meta.protocol_version = std::string(mcp::negotiate(version->value.GetString()));
  for (auto [key, target] : {std::pair{"capabilities", &meta.client_capabilities},
                             std::pair{"clientInfo", &meta.client_info}}) {
    auto it = params.FindMember(key);
    if (it == params.MemberEnd()) continue;
    if (!it->value.IsObject()) {
      return bad_request(request.id, mcp::kInvalidParams,
                         std::string("initialize params.") + key + " must be an object");
    }
    *target = compact(it->value);
  }
  meta.owner = call.caller;
  meta.created_ms = clock().now_ms();
  meta_ = std::move(meta);
  store_meta();

  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("protocolVersion");
  w.String(meta_->protocol_version.c_str());
  w.Key("capabilities");
  w.StartObject();
  w.EndObject();
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

HttpResponse McpSession::post(const SessionCall& call) {
  if (call.batch && !mcp::allows_batch(meta_->protocol_version)) {
    return rejected(mcp::Rejection::bad_batch());
  }
  std::vector<std::string> answers;
  for (const auto& m : call.messages) {
    switch (m.kind) {
      case Message::Kind::request:
        if (m.method == "initialize") {
          return bad_request(m.id, mcp::kInvalidRequest,
                             "this session is already initialized: send initialize without "
                             "MCP-Session-Id to start a new one");
        }
        answers.push_back(answer(m));
        break;
      case Message::Kind::notification:
        if (m.method == "notifications/initialized" && !meta_->initialized) {
          meta_->initialized = true;
          store_meta();
        }
        break;
      case Message::Kind::result_response:
      case Message::Kind::error_response:
        // Answers to server-to-client requests; none are issued yet, so each is dropped.
        break;
    }
  }
  if (answers.empty()) return HttpResponse{202, {}, {}};
  return event_stream(answers);
}

std::string McpSession::answer(const Message& request) {
  if (request.method == "ping") return mcp::result_response(*request.id, "{}");
  return mcp::error_response(request.id, mcp::kMethodNotFound,
                             "method not found: " + request.method);
}

HttpResponse McpSession::remove() {
  if (auto ok = delete_all(); !ok) throw std::runtime_error(ok.error().describe());
  meta_.reset();
  return HttpResponse{200, {}, {}};
}

void McpSession::store_meta() {
  if (auto ok = put(mcp::kSessionMetaKey, meta_->to_json()); !ok) {
    throw std::runtime_error(ok.error().describe());
  }
}

Result<void> register_mcp_session(Runtime& runtime, const McpSessionOptions& options) {
  NamespaceOptions ns;
  ns.idle_timeout = options.idle_timeout;
  return runtime.register_namespace(
      kMcpSessionNamespace, [&options] { return std::make_unique<McpSession>(options); }, ns);
}

}  // namespace dorm::actors
