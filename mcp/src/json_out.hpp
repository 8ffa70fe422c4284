// JsonOut — a RapidJSON Writer with its buffer, and the calls every result writer of this
// layer repeats (private to mcp/src).
//
// Members are written by key; an optional member is left out when its value is empty, as
// MCP leaves out absent optional fields. raw() copies JSON text produced by another writer
// (or validated when it was registered) into the output as it is.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <string_view>

namespace dorm::mcp::detail {

class JsonOut {
 public:
  rapidjson::Writer<rapidjson::StringBuffer>& writer() { return w_; }

  void key(std::string_view key) { w_.Key(key.data(), size(key)); }
  void string(std::string_view value) { w_.String(value.data(), size(value)); }
  // "key":"value".
  void member(std::string_view k, std::string_view value) {
    key(k);
    string(value);
  }
  // "key":"value", only when value is not empty.
  void optional_member(std::string_view k, std::string_view value) {
    if (!value.empty()) member(k, value);
  }
  // "key":JSON, the text copied as it is. Precondition: `json` is one JSON value of `type`.
  void raw_member(std::string_view k, std::string_view json,
                  rapidjson::Type type = rapidjson::kObjectType) {
    key(k);
    raw(json, type);
  }
  void raw(std::string_view json, rapidjson::Type type = rapidjson::kObjectType) {
    w_.RawValue(json.data(), json.size(), type);
  }

  // The text written so far.
  std::string text() const { return std::string(buffer_.GetString(), buffer_.GetSize()); }

 private:
  static rapidjson::SizeType size(std::string_view s) {
    return static_cast<rapidjson::SizeType>(s.size());
  }

  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> w_{buffer_};
};

}  // namespace dorm::mcp::detail
