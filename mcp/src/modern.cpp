#include "dorm/mcp/modern.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>

#include "dorm/mcp/access_token.hpp"
#include "dorm/mcp/feature_methods.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/protocol_version.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "json_out.hpp"
#include "json_text.hpp"

namespace dorm::mcp {
namespace {

constexpr std::array<std::string_view, 8> kLogLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  return obj.IsObject() && obj.HasMember(key) ? &obj[key] : nullptr;
}

std::string_view string_of(const rapidjson::Value& value) {
  return {value.GetString(), value.GetStringLength()};
}

Rejection meta_error(const std::optional<RequestId>& id, std::string_view message) {
  return modern_error(400, id, kInvalidParams, message, {}, "modern_meta_invalid");
}

Rejection header_mismatch(const std::optional<RequestId>& id, std::string message) {
  return modern_error(400, id, kHeaderMismatch, message, {}, "modern_header_mismatch");
}

// The member of params a method's Mcp-Name carries, or null for methods without one.
const char* name_member(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") return "taskId";
  return nullptr;
}

// Checks one required routing header against the body's value.
std::optional<Rejection> check_header(const std::optional<RequestId>& id, std::string_view header,
                                      std::optional<std::string_view> raw, std::string_view body_value) {
  if (!raw) return header_mismatch(id, "the " + std::string(header) + " header is missing");
  auto value = decode_header_value(*raw);
  if (!value) {
    return header_mismatch(id, "the " + std::string(header) +
                                   " header holds characters it may not, or malformed base64");
  }
  if (*value != body_value) {
    return header_mismatch(id, "the " + std::string(header) + " header (" + *value +
                                   ") does not match the body (" + std::string(body_value) + ")");
  }
  return std::nullopt;
}

// The methods the modern era removed: answered 404 like an unknown method.
bool removed_method(std::string_view method) {
  return method == "initialize" || method == "ping" || method == "logging/setLevel" ||
         method == "resources/subscribe" || method == "resources/unsubscribe";
}

ModernAnswer method_not_found(const ModernRequest& request) {
  const std::string& method = request.message.method;
  std::string why = removed_method(method)
                        ? method + " is not part of MCP " + std::string(kModernProtocolVersion) +
                              " (it has no handshake, sessions or subscriptions of that kind)"
                        : "method not found: " + method;
  auto r = modern_error(404, request.message.id, kMethodNotFound, why);
  return ModernAnswer{r.http_status, std::move(r.body)};
}

void write_capabilities(detail::JsonOut& out, const ModernServer& server) {
  auto& w = out.writer();
  const bool resources = server.resources && !server.resources->empty();
  const bool prompts = server.prompts && !server.prompts->empty();
  // With subscriptions/listen, every list change is announced and resources can be
  // subscribed to when the registry supports it.
  const bool listen = server.listen != nullptr;
  auto flag = [&](const char* key, bool on) {
    if (!on) return;
    out.key(key);
    w.Bool(true);
  };
  w.StartObject();
  out.key("tools");
  w.StartObject();
  flag("listChanged", listen);
  w.EndObject();
  if (resources) {
    out.key("resources");
    w.StartObject();
    flag("subscribe", listen && server.resources->supports_subscribe());
    flag("listChanged", listen);
    w.EndObject();
  }
  if (prompts) {
    out.key("prompts");
    w.StartObject();
    flag("listChanged", listen);
    w.EndObject();
  }
  if (prompts || (resources && server.resources->template_count() > 0)) {
    out.key("completions");
    w.StartObject();
    w.EndObject();
  }
  // The revision's logging: a request's `_meta` logLevel asks for messages on its stream.
  out.key("logging");
  w.StartObject();
  w.EndObject();
  out.key("extensions");
  w.StartObject();
  out.key(kTasksExtension);
  w.StartObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
}

}  // namespace

bool is_modern(std::optional<std::string_view> protocol_header, const ParsedBody* body) {
  if (protocol_header) return !is_supported(*protocol_header);
  if (body == nullptr || body->batch || body->messages.size() != 1) return false;
  const Message& m = body->messages[0];
  if (m.kind != Message::Kind::request && m.kind != Message::Kind::notification) return false;
  if (m.params.empty()) return false;
  rapidjson::Document params;
  params.Parse(m.params.data(), m.params.size());
  if (params.HasParseError()) return false;
  const rapidjson::Value* meta = member(params, "_meta");
  return meta != nullptr && member(*meta, kMetaProtocolVersion) != nullptr;
}

std::optional<std::string> decode_header_value(std::string_view raw) {
  while (!raw.empty() && (raw.front() == ' ' || raw.front() == '\t')) raw.remove_prefix(1);
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t')) raw.remove_suffix(1);
  std::string value;
  constexpr std::string_view open = "=?base64?", close = "?=";
  if (raw.size() >= open.size() + close.size() && raw.starts_with(open) && raw.ends_with(close)) {
    std::string_view b64 = raw.substr(open.size(), raw.size() - open.size() - close.size());
    // Standard base64 with its padding (RFC 4648 §4): the length is a multiple of 4.
    if (b64.size() % 4 != 0) return std::nullopt;
    std::string url(b64);
    std::size_t padding = 0;
    while (!url.empty() && url.back() == '=' && padding < 2) {
      url.pop_back();
      ++padding;
    }
    for (char& c : url) {
      if (c == '+') c = '-';
      else if (c == '/') c = '_';
      else if (c == '-' || c == '_') return std::nullopt;
    }
    auto decoded = base64url_decode(url);
    if (!decoded) return std::nullopt;
    rapidjson::Document check;
    // The decoded bytes must be UTF-8 text: validate them as a JSON string's content.
    std::string quoted = "\"";
    for (char c : *decoded) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    quoted += '"';
    check.Parse<rapidjson::kParseValidateEncodingFlag>(quoted.data(), quoted.size());
    if (check.HasParseError()) return std::nullopt;
    value = std::move(*decoded);
  } else {
    // Text that is not plain ASCII travels base64-encoded (the sentinel above).
    for (unsigned char c : raw) {
      if (c >= 0x80) return std::nullopt;
    }
    value = std::string(raw);
  }
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) return std::nullopt;
  }
  return value;
}

namespace {

// Appends to `out` the (argument path, header name) pairs of `schema`'s x-mcp-header
// properties, reached through `properties` chains only.
void header_params(const rapidjson::Value& schema, std::vector<const char*>& path,
                   std::vector<std::pair<std::vector<std::string>, std::string>>& out) {
  const rapidjson::Value* properties = member(schema, "properties");
  if (!properties || !properties->IsObject()) return;
  for (auto it = properties->MemberBegin(); it != properties->MemberEnd(); ++it) {
    path.push_back(it->name.GetString());
    if (const rapidjson::Value* h = member(it->value, "x-mcp-header"); h && h->IsString()) {
      out.emplace_back(std::vector<std::string>(path.begin(), path.end()), h->GetString());
    }
    header_params(it->value, path, out);
    path.pop_back();
  }
}

}  // namespace

std::optional<Rejection> check_param_headers(
    const ModernRequest& request, const ToolRegistry* tools,
    const std::function<std::optional<std::string_view>(std::string_view)>& header) {
  const Message& m = request.message;
  if (m.method != "tools/call" || tools == nullptr) return std::nullopt;
  rapidjson::Document params;
  params.Parse(m.params.c_str());
  const rapidjson::Value* name = member(params, "name");
  if (!name || !name->IsString()) return std::nullopt;
  const ToolRegistry::Entry* entry = tools->find(string_of(*name));
  if (!entry) return std::nullopt;
  rapidjson::Document schema;
  schema.Parse(tools->spec(*entry).input_schema.c_str());
  std::vector<std::pair<std::vector<std::string>, std::string>> annotated;
  std::vector<const char*> path;
  header_params(schema, path, annotated);
  if (annotated.empty()) return std::nullopt;
  const rapidjson::Value* arguments = member(params, "arguments");
  for (const auto& [at, header_name] : annotated) {
    const rapidjson::Value* value = arguments;
    for (const auto& step : at) value = value ? member(*value, step.c_str()) : nullptr;
    if (!value || value->IsNull()) continue;
    std::string lower = "mcp-param-";
    for (char c : header_name) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    std::string shown = "Mcp-Param-" + header_name;
    auto raw = header(lower);
    if (!raw) return header_mismatch(m.id, "the " + shown + " header is missing (the argument is in the body)");
    auto decoded = decode_header_value(*raw);
    if (!decoded) return header_mismatch(m.id, "the " + shown + " header holds characters it may not, or malformed base64");
    bool same = false;
    if (value->IsString()) {
      same = *decoded == string_of(*value);
    } else if (value->IsBool()) {
      same = *decoded == (value->GetBool() ? "true" : "false");
    } else if (value->IsInt64()) {
      try {
        std::size_t used = 0;
        long long n = std::stoll(*decoded, &used);
        same = used == decoded->size() && n == value->GetInt64();
      } catch (const std::exception&) {
        same = false;
      }
    } else {
      same = *decoded == detail::compact(*value);
    }
    if (!same) return header_mismatch(m.id, "the " + shown + " header does not match the argument in the body");
  }
  return std::nullopt;
}

bool declares_extension(std::string_view client_capabilities_json, std::string_view extension) {
  rapidjson::Document caps;
  caps.Parse(client_capabilities_json.data(), client_capabilities_json.size());
  const rapidjson::Value* extensions = caps.HasParseError() ? nullptr : member(caps, "extensions");
  std::string key(extension);
  return extensions && extensions->IsObject() && extensions->HasMember(key.c_str()) &&
         (*extensions)[key.c_str()].IsObject();
}

Rejection tasks_extension_required(const std::optional<RequestId>& id, std::string_view why) {
  std::string data = std::string(R"({"requiredCapabilities":{"extensions":{")") + kTasksExtension + R"(":{}}}})";
  return modern_error(400, id, kMissingRequiredClientCapability, why, data, "tasks_extension_required");
}

bool declares_capability(std::string_view client_capabilities_json, std::string_view capability) {
  rapidjson::Document caps;
  caps.Parse(client_capabilities_json.data(), client_capabilities_json.size());
  if (caps.HasParseError() || !caps.IsObject()) return false;
  std::string key(capability);
  return caps.HasMember(key.c_str()) && caps[key.c_str()].IsObject();
}

std::optional<ClientRequestRefusal> refuse_client_request(std::string_view method,
                                                          std::string_view params_json,
                                                          std::string_view client_capabilities_json,
                                                          std::string_view where) {
  if (method == "ping") return std::nullopt;
  const char* capability = method == "elicitation/create"      ? "elicitation"
                           : method == "sampling/createMessage" ? "sampling"
                           : method == "roots/list"            ? "roots"
                                                               : nullptr;
  if (!capability) {
    return ClientRequestRefusal{{}, "a tool may send the client elicitation/create, "
                                    "sampling/createMessage, roots/list or ping, not " +
                                        std::string(method)};
  }
  rapidjson::Document capabilities;
  capabilities.Parse(client_capabilities_json.empty() ? "{}" : std::string(client_capabilities_json).c_str());
  const rapidjson::Value* declared = member(capabilities, capability);
  if (!declared || !declared->IsObject()) {
    return ClientRequestRefusal{capability, "the client did not declare the " + std::string(capability) +
                                                " capability " + std::string(where) +
                                                ", so it cannot be sent " + std::string(method)};
  }
  if (method == "elicitation/create") {
    // `elicitation: {}` means form mode only; `form` and `url` name the modes (2025-11-25 on).
    std::string mode = "form";
    rapidjson::Document params;
    params.Parse(params_json.data(), params_json.size());
    if (!params.HasParseError() && params.IsObject()) {
      if (const rapidjson::Value* m = member(params, "mode"); m && m->IsString()) mode = m->GetString();
    }
    bool form = declared->ObjectEmpty() || member(*declared, "form");
    bool url = member(*declared, "url") != nullptr;
    if ((mode == "form" && !form) || (mode == "url" && !url) || (mode != "form" && mode != "url")) {
      return ClientRequestRefusal{capability, "the client does not support elicitation mode \"" + mode + "\""};
    }
  }
  return std::nullopt;
}

Rejection modern_error(int http_status, const std::optional<RequestId>& id, int code,
                       std::string_view message, std::string_view data_json, std::string_view reason) {
  Rejection r;
  r.http_status = http_status;
  r.headers = {{"Content-Type", "application/json"}};
  r.body = error_response(id, code, message, data_json);
  r.reason = reason;
  return r;
}

std::variant<ModernRequest, Rejection> check_modern(const ModernHeaders& headers, ParsedBody body) {
  if (body.batch || body.messages.size() != 1) {
    return modern_error(400, std::nullopt, kInvalidRequest,
                        "MCP 2026-07-28 takes one message per POST: no batches", {}, "modern_batch");
  }
  ModernRequest out;
  out.message = std::move(body.messages[0]);
  const Message& m = out.message;
  const auto& id = m.id;
  if (m.is_response()) {
    return modern_error(400, id, kInvalidRequest,
                        "MCP 2026-07-28 clients send no responses: the server asks for input "
                        "in its results (input_required)",
                        {}, "modern_response");
  }
  // The revision defines no client notification over HTTP: one is taken (202) and
  // nothing more is asked of it.
  if (m.kind == Message::Kind::notification) return out;
  rapidjson::Document params;
  params.Parse(m.params.empty() ? "{}" : m.params.c_str());
  if (params.HasParseError() || !params.IsObject()) {
    return meta_error(id, "params must be an object holding _meta");
  }
  const rapidjson::Value* meta = member(params, "_meta");
  if (meta == nullptr || !meta->IsObject()) {
    return meta_error(id, "params._meta is required in MCP 2026-07-28 (it carries " +
                              std::string(kMetaProtocolVersion) + " and " + kMetaClientCapabilities + ")");
  }
  const rapidjson::Value* version = member(*meta, kMetaProtocolVersion);
  if (version == nullptr || !version->IsString()) {
    return meta_error(id, std::string("params._meta[\"") + kMetaProtocolVersion + "\"] (a string) is required");
  }
  const rapidjson::Value* caps = member(*meta, kMetaClientCapabilities);
  if (caps == nullptr || !caps->IsObject()) {
    return meta_error(id, std::string("params._meta[\"") + kMetaClientCapabilities +
                              "\"] (an object; {} for none) is required");
  }
  if (const rapidjson::Value* info = member(*meta, kMetaClientInfo); info && !info->IsObject()) {
    return meta_error(id, std::string("params._meta[\"") + kMetaClientInfo + "\"] must be an object");
  }
  if (const rapidjson::Value* level = member(*meta, kMetaLogLevel)) {
    bool known = false;
    if (level->IsString()) {
      for (auto l : kLogLevels) known = known || l == string_of(*level);
    }
    if (!known) {
      return meta_error(id, std::string("params._meta[\"") + kMetaLogLevel +
                                "\"] must be one of debug, info, notice, warning, error, critical, "
                                "alert, emergency");
    }
    out.log_level = std::string(string_of(*level));
  }
  out.protocol_version = std::string(string_of(*version));
  if (!headers.protocol_version) {
    return header_mismatch(id, "the MCP-Protocol-Version header is missing");
  }
  auto header_version = decode_header_value(*headers.protocol_version);
  if (!header_version || *header_version != out.protocol_version) {
    return header_mismatch(id, "the MCP-Protocol-Version header does not match params._meta[\"" +
                                   std::string(kMetaProtocolVersion) + "\"] (" +
                                   out.protocol_version + ")");
  }
  if (out.protocol_version != kModernProtocolVersion) {
    detail::JsonOut data;
    data.writer().StartObject();
    data.raw_member("supported", supported_versions_json(), rapidjson::kArrayType);
    data.member("requested", out.protocol_version);
    data.writer().EndObject();
    return modern_error(400, id, kUnsupportedProtocolVersion, "Unsupported protocol version", data.text(),
                        "modern_unsupported_version");
  }
  if (auto bad = check_header(id, "Mcp-Method", headers.method, m.method)) return *bad;
  if (const char* name_key = name_member(m.method)) {
    const rapidjson::Value* name = member(params, name_key);
    if (name && name->IsString()) {
      if (auto bad = check_header(id, "Mcp-Name", headers.name, string_of(*name))) return *bad;
    }
  }
  out.client_capabilities = detail::compact(*caps);
  if (const rapidjson::Value* info = member(*meta, kMetaClientInfo)) out.client_info = detail::compact(*info);
  if (const rapidjson::Value* token = member(*meta, "progressToken")) {
    if (token->IsString() || token->IsInt64()) out.progress_token = detail::compact(*token);
  }
  return out;
}

std::variant<ListenFilter, ModernAnswer> listen_filter(const ModernRequest& request, const ModernServer& server) {
  const Message& m = request.message;
  auto refuse = [&m](std::string why) {
    return ModernAnswer{400, error_response(m.id, kInvalidParams, why)};
  };
  rapidjson::Document params;
  params.Parse(m.params.c_str());
  const rapidjson::Value* wanted = member(params, "notifications");
  if (!wanted || !wanted->IsObject()) return refuse("subscriptions/listen needs params.notifications (an object)");
  auto asks = [wanted](const char* key) {
    const rapidjson::Value* v = member(*wanted, key);
    return v && v->IsBool() && v->GetBool();
  };
  ListenFilter filter;
  const bool resources = server.resources && !server.resources->empty();
  filter.tools_list_changed = asks("toolsListChanged");
  filter.prompts_list_changed = asks("promptsListChanged") && server.prompts && !server.prompts->empty();
  filter.resources_list_changed = asks("resourcesListChanged") && resources;
  if (const rapidjson::Value* uris = member(*wanted, "resourceSubscriptions")) {
    if (!uris->IsArray()) return refuse("params.notifications.resourceSubscriptions must be an array of URIs");
    for (const auto& uri : uris->GetArray()) {
      if (!uri.IsString()) return refuse("params.notifications.resourceSubscriptions must be an array of URIs");
      if (resources && server.resources->supports_subscribe()) filter.resource_uris.insert(std::string(string_of(uri)));
    }
  }
  if (const rapidjson::Value* tasks = member(*wanted, "taskIds")) {
    if (!declares_extension(request.client_capabilities, kTasksExtension)) {
      auto r = tasks_extension_required(m.id, "taskIds need the " + std::string(kTasksExtension) + " extension");
      return ModernAnswer{r.http_status, std::move(r.body)};
    }
    const char* shape = "params.notifications.taskIds must be an array of task ids (at most 1000)";
    if (!tasks->IsArray() || tasks->Size() > kMaxListenTaskIds) return refuse(shape);
    for (const auto& id : tasks->GetArray()) {
      if (!id.IsString()) return refuse(shape);
      // Every id is honoured as asked: whose task it is shows only when it changes (the
      // hub tells a task's changes to its owner's subscriptions alone).
      filter.task_ids.insert(std::string(string_of(id)));
    }
  }
  return filter;
}

namespace {

constexpr std::size_t kStateMacBytes = 16;

// The first kStateMacBytes of HMAC-SHA256(key, domain ‖ handle bytes ‖ round ‖ user ‖ 0 ‖ org).
std::string request_state_mac(std::string_view head, const Identity& owner, std::string_view key) {
  std::string input = "dorm-request-state";
  input.push_back('\0');
  input.append(head);
  input.append(owner.user).push_back('\0');
  input.append(owner.org);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(input.data()),
       input.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), kStateMacBytes);
}

}  // namespace

std::string seal_request_state(const RequestState& state, const Identity& owner, std::string_view key) {
  std::string bytes;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i + 1 < state.handle.size(); i += 2) {
    bytes += static_cast<char>(nibble(state.handle[i]) * 16 + nibble(state.handle[i + 1]));
  }
  for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((state.round >> shift) & 0xff);
  bytes += request_state_mac(bytes, owner, key);
  return base64url_encode(bytes);
}

std::optional<RequestState> open_request_state(std::string_view text, const Identity& caller, std::string_view key) {
  if (text.size() != 48) return std::nullopt;
  auto bytes = base64url_decode(text);
  if (!bytes || bytes->size() != 20 + kStateMacBytes) return std::nullopt;
  std::string expected = request_state_mac(std::string_view(*bytes).substr(0, 20), caller, key);
  if (CRYPTO_memcmp(expected.data(), bytes->data() + 20, kStateMacBytes) != 0) return std::nullopt;
  RequestState out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < 16; ++i) {
    auto b = static_cast<unsigned char>((*bytes)[i]);
    out.handle += kHex[b >> 4];
    out.handle += kHex[b & 0xf];
  }
  for (std::size_t i = 16; i < 20; ++i) {
    out.round = (out.round << 8) | static_cast<unsigned char>((*bytes)[i]);
  }
  return out;
}

std::string supported_versions_json() {
  detail::JsonOut out;
  out.writer().StartArray();
  out.string(kModernProtocolVersion);
  for (auto v : kSupportedProtocolVersions) out.string(v);
  out.writer().EndArray();
  return out.text();
}

std::string modern_result(std::string_view result_json, const ModernServer& server,
                          std::string_view result_type, std::optional<CacheHints> cache) {
  rapidjson::Document doc;
  doc.Parse(result_json.data(), result_json.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::string(result_json);
  auto& a = doc.GetAllocator();
  auto str = [&a](std::string_view s) {
    return rapidjson::Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
  };
  doc.RemoveMember("resultType");
  doc.AddMember("resultType", str(result_type), a);
  if (cache) {
    doc.RemoveMember("ttlMs");
    doc.RemoveMember("cacheScope");
    doc.AddMember("ttlMs", rapidjson::Value(cache->ttl_ms), a);
    doc.AddMember("cacheScope", str(cache->is_public ? "public" : "private"), a);
  }
  if (!doc.HasMember("_meta") || !doc["_meta"].IsObject()) {
    doc.RemoveMember("_meta");
    doc.AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), a);
  }
  rapidjson::Value info(rapidjson::kObjectType);
  info.AddMember("name", str(server.name), a);
  info.AddMember("version", str(server.version), a);
  doc["_meta"].RemoveMember(kMetaServerInfo);
  doc["_meta"].AddMember(rapidjson::StringRef(kMetaServerInfo), info, a);
  return detail::compact(doc);
}

std::string discover_result(const ModernServer& server) {
  detail::JsonOut out;
  out.writer().StartObject();
  out.raw_member("supportedVersions", supported_versions_json(), rapidjson::kArrayType);
  out.key("capabilities");
  write_capabilities(out, server);
  out.writer().EndObject();
  return modern_result(out.text(), server, "complete", CacheHints{server.list_ttl_ms, true});
}

std::optional<ModernAnswer> answer_stateless(const ModernRequest& request, const ModernServer& server) {
  const Message& m = request.message;
  if (m.kind != Message::Kind::request) return std::nullopt;
  const std::string& method = m.method;
  std::optional<MethodResult> answer;
  bool cacheable = true;
  if (method == "server/discover") {
    return ModernAnswer{200, result_response(*m.id, discover_result(server))};
  } else if (method == "tools/list") {
    answer = tools_list_result(server.tools, m.params, server.page_size);
  } else if (method == "prompts/list") {
    answer = prompts_list_result(server.prompts, m.params, server.page_size);
  } else if (method == "resources/list") {
    answer = resources_list_result(server.resources, m.params, server.page_size);
  } else if (method == "resources/templates/list") {
    answer = resources_templates_list_result(server.resources, m.params, server.page_size);
  } else if (method == "completion/complete") {
    answer = completion_complete_result(server.resources, server.prompts, m.params);
    cacheable = false;
  } else if (method == "tools/call" || method == "prompts/get" || method == "resources/read") {
    return std::nullopt;
  } else if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    if (declares_extension(request.client_capabilities, kTasksExtension)) return std::nullopt;
    auto r = tasks_extension_required(m.id, method + " needs the " + kTasksExtension +
                                                " extension declared in this request's clientCapabilities");
    return ModernAnswer{r.http_status, std::move(r.body)};
  } else {
    return method_not_found(request);
  }
  if (auto* error = std::get_if<MethodError>(&*answer)) {
    int status = error->code == kMethodNotFound ? 404 : 200;
    return ModernAnswer{status, error_response(m.id, error->code, error->message, error->data_json)};
  }
  std::optional<CacheHints> hints;
  if (cacheable) hints = CacheHints{server.list_ttl_ms, true};
  return ModernAnswer{200, result_response(*m.id, modern_result(std::get<std::string>(*answer), server,
                                                                 "complete", hints))};
}

}  // namespace dorm::mcp
