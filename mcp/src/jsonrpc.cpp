#include "dorm/mcp/jsonrpc.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cassert>
#include <charconv>

#include "json_text.hpp"

namespace dorm::mcp {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

std::string_view view(const rapidjson::Value& string_value) {
  return {string_value.GetString(), string_value.GetStringLength()};
}

// The members JSON-RPC 2.0 defines for a message; null where absent.
struct Envelope {
  const rapidjson::Value* jsonrpc = nullptr;
  const rapidjson::Value* id = nullptr;
  const rapidjson::Value* method = nullptr;
  const rapidjson::Value* params = nullptr;
  const rapidjson::Value* result = nullptr;
  const rapidjson::Value* error = nullptr;

  const rapidjson::Value** slot(std::string_view name) {
    if (name == "jsonrpc") return &jsonrpc;
    if (name == "id") return &id;
    if (name == "method") return &method;
    if (name == "params") return &params;
    if (name == "result") return &result;
    if (name == "error") return &error;
    return nullptr;
  }
};

// Why one message is not a valid JSON-RPC 2.0 message, and its id if that was readable.
struct Invalid {
  std::string why;
  std::optional<RequestId> id;
};

bool valid_error_object(const rapidjson::Value& error) {
  if (!error.IsObject()) return false;
  auto code = error.FindMember("code");
  auto message = error.FindMember("message");
  return code != error.MemberEnd() && code->value.IsInt64() && message != error.MemberEnd() &&
         message->value.IsString();
}

std::variant<Message, Invalid> read_message(const rapidjson::Value& value) {
  if (!value.IsObject()) return Invalid{"a JSON-RPC message must be a JSON object", {}};
  Envelope e;
  for (const auto& member : value.GetObject()) {
    std::string_view name = view(member.name);
    const rapidjson::Value** slot = e.slot(name);
    if (slot == nullptr) continue;  // not part of the envelope: ignored
    if (*slot != nullptr) {
      return Invalid{"the member \"" + std::string(name) + "\" appears more than once", {}};
    }
    *slot = &member.value;
  }

  // The id is read first so that every later failure can be answered to it.
  std::optional<RequestId> id;
  bool null_id = false;
  if (e.id != nullptr) {
    if (e.id->IsString()) {
      if (e.id->GetStringLength() > kMaxRequestIdBytes) {
        return Invalid{"\"id\" is longer than " + std::to_string(kMaxRequestIdBytes) +
                           " bytes (it has " + std::to_string(e.id->GetStringLength()) + ")",
                       {}};
      }
      id = RequestId(std::string(view(*e.id)));
    } else if (e.id->IsInt64()) {
      id = RequestId(e.id->GetInt64());
    } else if (e.id->IsNull()) {
      null_id = true;
    } else {
      return Invalid{"\"id\" must be a string or an integer in the signed 64-bit range", {}};
    }
  }
  auto invalid = [&](std::string why) { return Invalid{std::move(why), id}; };

  if (e.jsonrpc == nullptr || !e.jsonrpc->IsString() || view(*e.jsonrpc) != "2.0") {
    return invalid("\"jsonrpc\" must be the string \"2.0\"");
  }

  Message m;
  if (e.method != nullptr) {
    if (e.result != nullptr || e.error != nullptr) {
      return invalid("a message cannot have both \"method\" and \"result\" or \"error\"");
    }
    if (!e.method->IsString()) return invalid("\"method\" must be a string");
    if (e.params != nullptr && !e.params->IsObject() && !e.params->IsArray()) {
      return invalid("\"params\" must be an object or an array");
    }
    if (null_id) return invalid("null is not a valid request id");
    m.kind = id ? Message::Kind::request : Message::Kind::notification;
    m.id = std::move(id);
    m.method = std::string(view(*e.method));
    if (e.params != nullptr) m.params = detail::compact(*e.params);
    return m;
  }

  if (e.result == nullptr && e.error == nullptr) {
    return invalid(
        "a message needs \"method\" (a request or a notification) or \"result\" or \"error\" "
        "(a response)");
  }
  if (e.result != nullptr && e.error != nullptr) {
    return invalid("a response cannot have both \"result\" and \"error\"");
  }
  if (e.params != nullptr) return invalid("a response cannot have \"params\"");
  if (e.id == nullptr) return invalid("a response must have an \"id\"");
  if (e.result != nullptr) {
    if (null_id) return invalid("a result response must answer a string or integer id");
    m.kind = Message::Kind::result_response;
    m.id = std::move(id);
    m.result = detail::compact(*e.result);
    return m;
  }
  if (!valid_error_object(*e.error)) {
    return invalid("\"error\" must be an object with an integer \"code\" and a string \"message\"");
  }
  m.kind = Message::Kind::error_response;
  m.id = std::move(id);
  m.error = detail::compact(*e.error);
  return m;
}

void write_id(JsonWriter& w, const RequestId& id) {
  if (id.is_integer()) {
    w.Int64(id.integer());
  } else {
    w.String(id.string().data(), static_cast<rapidjson::SizeType>(id.string().size()));
  }
}

void write_id(JsonWriter& w, const std::optional<RequestId>& id) {
  if (id) {
    write_id(w, *id);
  } else {
    w.Null();
  }
}

void write_string(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// Copies JSON text that the caller promises is valid into the message.
void write_raw(JsonWriter& w, std::string_view json) {
  assert(detail::is_json(json));
  w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
}

[[maybe_unused]] bool object_or_array(std::string_view json) {
  return !json.empty() && (json.front() == '{' || json.front() == '[');
}

// Writes {"jsonrpc":"2.0", <members written by `members`>}.
template <class Members>
std::string write_message(Members&& members) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("jsonrpc");
  w.String("2.0");
  members(w);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string write_call(const std::optional<RequestId>& id, std::string_view method,
                       std::string_view params_json) {
  assert(params_json.empty() || object_or_array(params_json));
  return write_message([&](JsonWriter& w) {
    if (id) {
      w.Key("id");
      write_id(w, id);
    }
    w.Key("method");
    write_string(w, method);
    if (!params_json.empty()) {
      w.Key("params");
      write_raw(w, params_json);
    }
  });
}

std::string write_error_response(const std::optional<RequestId>& id, std::string_view error_json) {
  return write_message([&](JsonWriter& w) {
    w.Key("id");
    write_id(w, id);
    w.Key("error");
    write_raw(w, error_json);
  });
}

}  // namespace

std::string RequestId::to_json() const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  write_id(w, *this);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string RequestId::to_key() const {
  return is_integer() ? "i:" + std::to_string(integer()) : "s:" + string();
}

std::optional<RequestId> RequestId::from_key(std::string_view key) {
  if (key.starts_with("s:")) return RequestId(std::string(key.substr(2)));
  if (!key.starts_with("i:")) return std::nullopt;
  std::string_view digits = key.substr(2);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  RequestId id(value);
  // Only the canonical spelling is a key ("i:007" and "i:-0" are not).
  if (id.to_key() != key) return std::nullopt;
  return id;
}

std::string_view to_string(Message::Kind kind) {
  switch (kind) {
    case Message::Kind::request:
      return "request";
    case Message::Kind::notification:
      return "notification";
    case Message::Kind::result_response:
      return "result_response";
    case Message::Kind::error_response:
      return "error_response";
  }
  return "unknown";
}

std::variant<ParsedBody, ParseFailure> parse_body(std::string_view body) {
  rapidjson::Document doc;
  if (auto error = detail::parse_json(body, doc)) {
    return ParseFailure{kParseError, "Parse error: " + *error, std::nullopt};
  }
  ParsedBody parsed;
  if (doc.IsObject()) {
    auto read = read_message(doc);
    if (auto* invalid = std::get_if<Invalid>(&read)) {
      return ParseFailure{kInvalidRequest, "Invalid Request: " + invalid->why,
                          std::move(invalid->id)};
    }
    parsed.messages.push_back(std::get<Message>(std::move(read)));
    return parsed;
  }
  if (!doc.IsArray()) {
    return ParseFailure{kInvalidRequest,
                        "Invalid Request: the body must be a JSON object (one message) or a "
                        "JSON array (a batch of messages)",
                        std::nullopt};
  }
  parsed.batch = true;
  const auto batch = doc.GetArray();
  if (batch.Empty()) {
    return ParseFailure{kInvalidRequest, "Invalid Request: the batch is empty", std::nullopt};
  }
  if (batch.Size() > kMaxBatchMessages) {
    return ParseFailure{kInvalidRequest,
                        "Invalid Request: a batch holds at most " +
                            std::to_string(kMaxBatchMessages) + " messages, this one " +
                            std::to_string(batch.Size()),
                        std::nullopt};
  }
  std::size_t responses = 0;
  for (rapidjson::SizeType i = 0; i < batch.Size(); ++i) {
    auto read = read_message(batch[i]);
    if (auto* invalid = std::get_if<Invalid>(&read)) {
      return ParseFailure{
          kInvalidRequest,
          "Invalid Request: batch element " + std::to_string(i) + ": " + invalid->why,
          std::nullopt};
    }
    parsed.messages.push_back(std::get<Message>(std::move(read)));
    if (parsed.messages.back().is_response()) ++responses;
  }
  if (responses != 0 && responses != parsed.messages.size()) {
    return ParseFailure{kInvalidRequest,
                        "Invalid Request: a batch holds either requests and notifications or "
                        "responses, not both",
                        std::nullopt};
  }
  return parsed;
}

std::string result_response(const RequestId& id, std::string_view result_json) {
  assert(!result_json.empty());
  return write_message([&](JsonWriter& w) {
    w.Key("id");
    write_id(w, id);
    w.Key("result");
    write_raw(w, result_json);
  });
}

std::string error_response(const std::optional<RequestId>& id, int code, std::string_view message,
                           std::string_view data_json) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("code");
  w.Int(code);
  w.Key("message");
  write_string(w, message);
  if (!data_json.empty()) {
    w.Key("data");
    write_raw(w, data_json);
  }
  w.EndObject();
  return write_error_response(id, std::string_view(buffer.GetString(), buffer.GetSize()));
}

std::string notification(std::string_view method, std::string_view params_json) {
  return write_call(std::nullopt, method, params_json);
}

std::string request(const RequestId& id, std::string_view method, std::string_view params_json) {
  return write_call(id, method, params_json);
}

std::string to_json(const Message& message) {
  switch (message.kind) {
    case Message::Kind::request:
    case Message::Kind::notification:
      return write_call(message.id, message.method, message.params);
    case Message::Kind::result_response:
      assert(message.id.has_value());
      return result_response(*message.id, message.result);
    case Message::Kind::error_response:
      return write_error_response(message.id, message.error);
  }
  return {};
}

}  // namespace dorm::mcp
