#include "dorm/mcp/session_meta.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace dorm::mcp {
namespace {

Error corrupt(std::string_view why) {
  return Error{ErrorCode::corruption, "session metadata is malformed: " + std::string(why)};
}

}  // namespace

std::string SessionMeta::to_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&](const char* key, std::string_view value) {
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  };
  auto raw = [&](const char* key, std::string_view json) {
    w.Key(key);
    std::string_view text = json.empty() ? std::string_view("{}") : json;
    w.RawValue(text.data(), text.size(), rapidjson::kObjectType);
  };
  w.StartObject();
  str("protocolVersion", protocol_version);
  raw("clientCapabilities", client_capabilities);
  raw("clientInfo", client_info);
  w.Key("owner");
  w.StartObject();
  str("user", owner.user);
  str("org", owner.org);
  w.EndObject();
  str("logLevel", log_level);
  w.Key("createdMs");
  w.Int64(created_ms);
  w.Key("initialized");
  w.Bool(initialized);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<SessionMeta> SessionMeta::from_json(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return corrupt("not a JSON object");
  // Members by key, never by iterator: clang in C++20 mode warns that RapidJSON 1.1's
  // member iterators compare ambiguously.
  auto member = [](const rapidjson::Value& obj, const char* key) -> const rapidjson::Value* {
    return obj.IsObject() && obj.HasMember(key) ? &obj[key] : nullptr;
  };
  auto string_of = [&](const rapidjson::Value& obj, const char* key) -> const rapidjson::Value* {
    const rapidjson::Value* v = member(obj, key);
    return v && v->IsString() ? v : nullptr;
  };
  auto compact = [](const rapidjson::Value& v) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    v.Accept(w);
    return std::string(buffer.GetString(), buffer.GetSize());
  };
  SessionMeta meta;
  auto version = string_of(doc, "protocolVersion");
  auto level = string_of(doc, "logLevel");
  auto owner = member(doc, "owner");
  auto caps = member(doc, "clientCapabilities");
  auto info = member(doc, "clientInfo");
  auto created = member(doc, "createdMs");
  auto initialized = member(doc, "initialized");
  if (!version || !level || !owner || !owner->IsObject() || !caps || !caps->IsObject() ||
      !info || !info->IsObject() || !created || !created->IsInt64() || !initialized ||
      !initialized->IsBool()) {
    return corrupt("a member is missing or has the wrong type");
  }
  auto user = string_of(*owner, "user");
  auto org = string_of(*owner, "org");
  if (!user || !org) return corrupt("owner needs user and org");
  meta.protocol_version = version->GetString();
  meta.log_level = level->GetString();
  meta.owner = Identity{user->GetString(), org->GetString()};
  meta.client_capabilities = compact(*caps);
  meta.client_info = compact(*info);
  meta.created_ms = created->GetInt64();
  meta.initialized = initialized->GetBool();
  return meta;
}

}  // namespace dorm::mcp
