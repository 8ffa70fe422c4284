// JSON text as JavaScript's JSON.stringify writes it (see js_text.hpp).
#include "js_text.hpp"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace dorm::mcp::detail {
namespace {

// A number as JavaScript's Number.prototype.toString writes it (ECMA-262 Number::toString),
// which is what JSON.stringify prints: the shortest digits that read back as the same double
// (std::to_chars gives those, choosing the nearest on a tie as ECMA-262 does), in plain
// notation for decimal exponents -7 < e < 21 and as "1.5e+21" / "1e-7" outside it.
// Integral doubles have no ".0", and -0 prints as "0".
std::string js_number(double d) {
  if (d == 0) return "0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(end - buf));  // "-1.2345e+02"
  std::string out;
  if (sci.starts_with('-')) {
    out = "-";
    sci.remove_prefix(1);
  }
  std::size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  std::string_view exp_text = sci.substr(e + 1);
  if (exp_text.starts_with('+')) exp_text.remove_prefix(1);
  int exponent = 0;
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
  // ECMA-262's k (number of digits) and n (position of the decimal point).
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<std::size_t>(n));
    out += '.';
    out += digits.substr(static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += n - 1 < 0 ? "e-" : "e+";
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
  return out;
}

// RapidJSON spells the \u escapes of control characters with upper-case hex digits
// ("\u001F"), JSON.stringify with lower-case ones ("\u001f"). The others agree: both write
// \b \t \n \f \r \" \\ and leave "/", DEL and everything above U+001F as it is.
bool has_hex_letter_escape(const char* s, rapidjson::SizeType n) {
  return std::any_of(s, s + n, [](char c) {
    auto b = static_cast<unsigned char>(c);
    return b == 0x0B || b == 0x0E || b == 0x0F || (b >= 0x1A && b <= 0x1F);
  });
}

std::string js_string_literal(const char* s, rapidjson::SizeType n) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(s, n);
  std::string text(buffer.GetString(), buffer.GetSize());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') continue;
    ++i;  // the escaped character; a "\\" pair is skipped whole
    if (text[i] == 'u') {
      for (std::size_t j = i + 1; j <= i + 4; ++j) {
        text[j] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[j])));
      }
      i += 4;
    }
  }
  return text;
}

// A RapidJSON writer (Writer or PrettyWriter) that writes numbers and strings as
// JSON.stringify does. Value::Accept calls the handler through its static type, so these
// members take the place of the base's.
template <class Base>
class JsWriter : public Base {
 public:
  using Base::Base;

  bool Double(double d) {
    std::string text = js_number(d);
    return Base::RawValue(text.data(), text.size(), rapidjson::kNumberType);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy = false) {
    return has_hex_letter_escape(s, n) ? js_string(s, n) : Base::String(s, n, copy);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy = false) {
    return has_hex_letter_escape(s, n) ? js_string(s, n) : Base::Key(s, n, copy);
  }

 private:
  bool js_string(const char* s, rapidjson::SizeType n) {
    std::string text = js_string_literal(s, n);
    return Base::RawValue(text.data(), text.size(), rapidjson::kStringType);
  }
};

}  // namespace

// JSON.stringify(value, null, 2).
std::string js_pretty(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  JsWriter<rapidjson::PrettyWriter<rapidjson::StringBuffer>> writer(buffer);
  writer.SetIndent(' ', 2);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// JSON.stringify(value).
std::string js_compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  JsWriter<rapidjson::Writer<rapidjson::StringBuffer>> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace dorm::mcp::detail
