// RapidJSON 1.1 (as Debian ships it) does most of the hardening itself, through
// kParseFlags: it validates UTF-8 (kParseValidateEncodingFlag) and parses without recursion
// (kParseIterativeFlag), so no input overflows the stack. This file adds only what it
// cannot do:
//  1. limit nesting: it has no limit (the iterative parser nests as deep as memory allows,
//     while its Writer and every walk over a Document recurse), so CheckedBuilder counts;
//  2. read a NUL byte as a byte: its streams take one for the end of input;
//  3. refuse a lone low surrogate escape ("\udc00"): it decodes one into bytes that are not
//     UTF-8 (CheckedBuilder);
//  4. convert numbers safely and exactly (below; std::from_chars does it instead).
// Size is bounded before parsing, by each caller: a request body by HttpServer's
// max_body_bytes, a token file by kMaxTokenFileBytes.
#include "json_text.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cmath>
#include <cstdint>

namespace dorm::mcp::detail {
namespace {

// Numbers reach the builder as text (kParseNumbersAsStringsFlag) and are converted with
// std::from_chars, which rounds correctly. RapidJSON 1.1's own full-precision conversion
// fails an assertion and passes 0 to __builtin_clzll on some huge numbers (found by
// fuzz_jsonrpc: "9999999999992233720368547758089999991e307"), and its fast one may be off
// by an ulp, so that writing a value and reading it back would not give the same text.
constexpr unsigned kParseFlags = rapidjson::kParseValidateEncodingFlag |
                                 rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseNumbersAsStringsFlag;

// For a JSON number whose double conversion is out of range: true if it is too large
// (its magnitude is at least 10), false if it is too small (it rounds to zero). The text
// is a valid JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool too_large(std::string_view number) {
  if (number.starts_with('-')) number.remove_prefix(1);
  auto e = number.find_first_of("eE");
  std::string_view mantissa = number.substr(0, e);
  long long exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = number.substr(e + 1);
    bool negative = digits.starts_with('-');
    if (digits.starts_with('-') || digits.starts_with('+')) digits.remove_prefix(1);
    for (char c : digits) {
      if (exponent < 1'000'000'000'000) exponent = exponent * 10 + (c - '0');  // saturates
    }
    if (negative) exponent = -exponent;
  }
  auto dot = mantissa.find('.');
  std::string_view whole = mantissa.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : mantissa.substr(dot + 1);
  // The decimal exponent of the leading significant digit.
  long long lead = 0;
  if (auto first = whole.find_first_not_of('0'); first != std::string_view::npos) {
    lead = static_cast<long long>(whole.size() - first) - 1;
  } else if (auto first_fraction = fraction.find_first_not_of('0');
             first_fraction != std::string_view::npos) {
    lead = -static_cast<long long>(first_fraction) - 1;
  } else {
    return false;  // zero is never out of range
  }
  return lead + exponent > 0;
}

// True if `s` (UTF-8) encodes a UTF-16 surrogate code point (U+D800..U+DFFF), which
// is not a character and makes the text invalid UTF-8: ED A0..BF xx.
bool has_surrogate(const char* s, rapidjson::SizeType n) {
  for (rapidjson::SizeType i = 0; i + 1 < n; ++i) {
    if (static_cast<unsigned char>(s[i]) == 0xED && static_cast<unsigned char>(s[i + 1]) >= 0xA0) {
      return true;
    }
  }
  return false;
}

// A SAX handler that builds the document and stops the parse when
//  - arrays and objects nest deeper than kMaxJsonDepth,
//  - a number is too large for a double (RawNumber), or
//  - a string holds a lone low surrogate. RapidJSON validates the raw bytes and rejects a
//    lone high surrogate escape (\ud800), but decodes a lone low one (\udc00) into the
//    bytes ED B0 80, which are not UTF-8; whoever wrote such a string out again would
//    produce text that no validating parser accepts. (Raw surrogate bytes never get this
//    far: encoding validation refuses them, so ED A0..BF here always came from an escape.)
class CheckedBuilder {
 public:
  explicit CheckedBuilder(rapidjson::Document& doc) : doc_(doc) {}

  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(std::int64_t i) { return doc_.Int64(i); }
  bool Uint64(std::uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  // A number, as its JSON text: an integer in int64 or uint64 range stays an integer,
  // anything else becomes the nearest double (±0 if it underflows). Too large for a
  // double stops the parse.
  bool RawNumber(const char* s, rapidjson::SizeType n, bool /*copy*/) {
    const char* end = s + n;
    if (std::string_view(s, n).find_first_of(".eE") == std::string_view::npos) {
      if (*s == '-') {
        std::int64_t i = 0;
        if (auto r = std::from_chars(s, end, i); r.ec == std::errc{} && r.ptr == end) {
          return doc_.Int64(i);
        }
      } else {
        std::uint64_t u = 0;
        if (auto r = std::from_chars(s, end, u); r.ec == std::errc{} && r.ptr == end) {
          return doc_.Uint64(u);
        }
      }
    }
    double d = 0;
    auto r = std::from_chars(s, end, d);
    if (r.ec == std::errc::result_out_of_range) {
      if (too_large(std::string_view(s, n))) return refuse_number();
      return doc_.Double(*s == '-' ? -0.0 : 0.0);
    }
    if (r.ec != std::errc{} || r.ptr != end) return refuse_number();  // cannot happen
    if (std::isinf(d)) return refuse_number();
    return doc_.Double(d);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    return text(s, n) && doc_.String(s, n, copy);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    return text(s, n) && doc_.Key(s, n, copy);
  }
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
  bool lone_surrogate() const { return lone_surrogate_; }
  bool number_too_large() const { return number_too_large_; }

 private:
  bool enter() {
    if (++depth_ > kMaxJsonDepth) too_deep_ = true;
    return !too_deep_;
  }
  bool refuse_number() {
    number_too_large_ = true;
    return false;
  }
  bool text(const char* s, rapidjson::SizeType n) {
    lone_surrogate_ = has_surrogate(s, n);
    return !lone_surrogate_;
  }

  rapidjson::Document& doc_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  bool lone_surrogate_ = false;
  bool number_too_large_ = false;
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
  bool lone_surrogate = false;
  bool number_too_large = false;
  auto generate = [&](rapidjson::Document& target) {
    CheckedBuilder builder(target);
    result = reader.Parse<kParseFlags>(stream, builder);
    too_deep = builder.too_deep();
    lone_surrogate = builder.lone_surrogate();
    number_too_large = builder.number_too_large();
    return !result.IsError();
  };
  doc.Populate(generate);
  if (too_deep) {
    return "arrays and objects nest deeper than " + std::to_string(kMaxJsonDepth) +
           " levels (at offset " + std::to_string(result.Offset()) + ")";
  }
  if (lone_surrogate) {
    return "a \\u escape encodes a lone UTF-16 surrogate, which is not a character (in the "
           "string ending at offset " +
           std::to_string(result.Offset()) + ")";
  }
  if (number_too_large) {
    return "a number too large for a double (at offset " + std::to_string(result.Offset()) + ")";
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
