#include "json_text.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>

namespace dorm::mcp::detail {
namespace {

constexpr unsigned kParseFlags = rapidjson::kParseValidateEncodingFlag |
                                 rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseFullPrecisionFlag;

// A SAX handler that builds the document and stops the parse once arrays and objects
// nest deeper than kMaxJsonDepth.
class DepthLimitedBuilder {
 public:
  explicit DepthLimitedBuilder(rapidjson::Document& doc) : doc_(doc) {}

  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(std::int64_t i) { return doc_.Int64(i); }
  bool Uint64(std::uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    return doc_.RawNumber(s, n, copy);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) { return doc_.String(s, n, copy); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) { return doc_.Key(s, n, copy); }
  bool StartObject() { return enter() && doc_.StartObject(); }
  bool EndObject(rapidjson::SizeType members) {
    --depth_;
    return doc_.EndObject(members);
  }
  bool StartArray() { return enter() && doc_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) {
    --depth_;
    return doc_.EndArray(elements);
  }

  bool too_deep() const { return too_deep_; }

 private:
  bool enter() {
    if (++depth_ > kMaxJsonDepth) too_deep_ = true;
    return !too_deep_;
  }

  rapidjson::Document& doc_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

std::optional<std::string> parse_json(std::string_view text, rapidjson::Document& doc) {
  // RapidJSON's memory stream reads a NUL byte as the end of input, so "{}\0junk" would
  // parse as "{}". A raw NUL is never valid JSON (inside a string it must be escaped).
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    return "a NUL byte at offset " + std::to_string(nul);
  }
  rapidjson::MemoryStream stream(text.data(), text.size());
  rapidjson::Reader reader;
  rapidjson::ParseResult result;
  bool too_deep = false;
  auto generate = [&](rapidjson::Document& target) {
    DepthLimitedBuilder builder(target);
    result = reader.Parse<kParseFlags>(stream, builder);
    too_deep = builder.too_deep();
    return !result.IsError();
  };
  doc.Populate(generate);
  if (too_deep) {
    return "arrays and objects nest deeper than " + std::to_string(kMaxJsonDepth) +
           " levels (at offset " + std::to_string(result.Offset()) + ")";
  }
  if (result.IsError()) {
    std::string what = rapidjson::GetParseError_En(result.Code());
    if (what.ends_with('.')) what.pop_back();
    return what + " (at offset " + std::to_string(result.Offset()) + ")";
  }
  return std::nullopt;
}

std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

bool is_json(std::string_view text) {
  rapidjson::Document doc;
  return !parse_json(text, doc).has_value();
}

}  // namespace dorm::mcp::detail
