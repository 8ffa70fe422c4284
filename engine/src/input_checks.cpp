#include "input_checks.hpp"

#include <rapidjson/document.h>
#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace dorm::engine {

bool valid_utf8(std::string_view text) {
  // A MemoryStream is bounded by the view (a StringStream would read to a NUL).
  rapidjson::MemoryStream in(text.data(), text.size());
  rapidjson::StringBuffer ignored;
  while (in.Tell() < text.size()) {
    if (!rapidjson::UTF8<>::Validate(in, ignored)) return false;
  }
  return in.Tell() == text.size();
}

bool valid_json(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  return !doc.HasParseError();
}

std::string json_string(std::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace dorm::engine
