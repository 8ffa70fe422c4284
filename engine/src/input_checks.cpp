#include "input_checks.hpp"

#include <rapidjson/document.h>
#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
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

namespace {

// Refuses nesting deeper than kMaxJsonDepth while RapidJSON's reader walks the text.
struct DepthLimit : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, DepthLimit> {
  std::size_t depth = 0;
  bool Default() { return true; }
  bool StartObject() { return ++depth <= kMaxJsonDepth; }
  bool EndObject(rapidjson::SizeType) {
    --depth;
    return true;
  }
  bool StartArray() { return ++depth <= kMaxJsonDepth; }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
};

}  // namespace

bool valid_json(std::string_view text) {
  // Iterative, so a hostile text cannot overflow this thread's stack while it is checked;
  // bounded in depth, so the recursive walks that later copy or write the value are too.
  rapidjson::MemoryStream in(text.data(), text.size());
  rapidjson::Reader reader;
  DepthLimit limit;
  auto parsed = reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(in, limit);
  // A NUL byte reads as the end of the input: the whole text must have been consumed.
  return !parsed.IsError() && in.Tell() == text.size();
}

std::string json_string(std::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace dorm::engine
