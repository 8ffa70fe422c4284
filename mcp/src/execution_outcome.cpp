#include "dorm/mcp/execution_outcome.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/grammar/alnum_chars.hpp>
#include <boost/url/grammar/lut_chars.hpp>
#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <limits>

#include "js_text.hpp"
#include "json_out.hpp"
#include "json_text.hpp"

namespace dorm::mcp {
namespace {

using detail::JsonOut;
using detail::js_compact;
using detail::js_pretty;

// ---- characters ----

// `bytes` as valid UTF-8: each byte that does not begin a well-formed sequence (overlong,
// surrogate, truncated or stray) becomes U+FFFD. Text that reaches the model from outside
// JSON (messages, console lines, a decoded file) goes through this, so the result is always
// JSON that a validating parser accepts.
std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      out += bytes[pos++];
      continue;
    }
    // A stream over the rest: at its end Take() gives NUL without reading further, so a
    // sequence cut short by the end fails instead of reading past it.
    rapidjson::MemoryStream rest(bytes.data() + pos, bytes.size() - pos);
    unsigned codepoint = 0;
    if (rapidjson::UTF8<>::Decode(rest, &codepoint)) {
      out.append(bytes.substr(pos, rest.Tell()));
      pos += rest.Tell();
    } else {
      out += "\xEF\xBF\xBD";
      ++pos;
    }
  }
  return out;
}

bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !is_continuation(c); }));
}

// The first `max` code points of `text` and "\n... [truncated N chars]", N the number of
// code points left out; `text` itself when it is no longer than `max`. The cut falls between
// two UTF-8 sequences, never inside one.
std::string truncate(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);  // bytes >= code points
  std::size_t seen = 0;
  std::size_t cut = 0;
  for (; cut < text.size(); ++cut) {
    if (!is_continuation(text[cut]) && seen++ == max) break;
  }
  if (cut == text.size()) return std::string(text);
  return std::string(text.substr(0, cut)) + "\n... [truncated " +
         std::to_string(code_points(text) - max) + " chars]";
}

std::string join(const std::vector<std::string>& lines, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += separator;
    out += valid_utf8(lines[i]);
  }
  return out;
}

// ---- JSON given as text ----

// Parses `text`; text that is not JSON dorm accepts becomes a JSON string holding it
// (ExecutionOutcome's contract: the model sees what the code produced, never a crash).
void parse_or_string(std::string_view text, rapidjson::Document& doc) {
  if (!detail::parse_json(text, doc)) return;
  std::string raw = valid_utf8(text);
  doc.SetString(raw.data(), static_cast<rapidjson::SizeType>(raw.size()), doc.GetAllocator());
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

bool is_string_member(const rapidjson::Value& object, const char* name) {
  const rapidjson::Value* value = member(object, name);
  return value && value->IsString();
}

std::string_view string_of(const rapidjson::Value& value) {
  return {value.GetString(), value.GetStringLength()};
}

// A string as itself, anything else as JSON.stringify(value, null, 2) writes it.
std::string value_text(const rapidjson::Value& value) {
  return value.IsString() ? std::string(string_of(value)) : js_pretty(value);
}

// ---- what emit() produced ----

// True for a block MCP's ContentBlock accepts, with the fields each type requires.
bool is_content_block(const rapidjson::Value& value) {
  const rapidjson::Value* type = member(value, "type");
  if (!type || !type->IsString()) return false;
  std::string_view t = string_of(*type);
  if (t == "text") return is_string_member(value, "text");
  if (t == "image" || t == "audio") {
    return is_string_member(value, "data") && is_string_member(value, "mimeType");
  }
  if (t == "resource") {
    const rapidjson::Value* resource = member(value, "resource");
    return resource && resource->IsObject();
  }
  return t == "resource_link" && is_string_member(value, "uri") && is_string_member(value, "name");
}

// The bytes of base64 text, decoded as JavaScript's atob reads it (ASCII whitespace
// ignored, padding optional); nullopt when it is not base64.
std::optional<std::string> decode_base64(std::string_view base64) {
  std::string text;
  text.reserve(base64.size() + 2);
  for (char c : base64) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\f' && c != '\r') text += c;
  }
  std::size_t padding = 0;
  if (text.size() % 4 == 0) {
    while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
      ++padding;
    }
  } else if (text.size() % 4 == 1 || text.find('=') != std::string::npos) {
    return std::nullopt;
  } else {
    padding = 4 - text.size() % 4;
    text.append(padding, '=');
  }
  if (text.size() > static_cast<std::size_t>(INT_MAX)) return std::nullopt;
  std::string bytes(text.size() / 4 * 3, '\0');
  // EVP_DecodeBlock writes whole groups of three, the padding's zero bytes included.
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0 || static_cast<std::size_t>(n) < padding) return std::nullopt;
  bytes.resize(static_cast<std::size_t>(n) - padding);
  return bytes;
}

// encodeURIComponent: every byte but A-Z a-z 0-9 - _ . ! ~ * ' ( ) as %XX (upper case).
std::string uri_component(std::string_view text) {
  namespace grammar = boost::urls::grammar;
  static constexpr grammar::lut_chars kKept =
      grammar::lut_chars(grammar::alnum_chars) + grammar::lut_chars("-_.!~*'()");
  return boost::urls::encode(text, kKept);
}

// The MIME type without parameters, in lower case: "Text/Plain; charset=x" → "text/plain".
std::string essence(std::string_view mime_type) {
  mime_type = mime_type.substr(0, mime_type.find(';'));
  while (!mime_type.empty() && std::isspace(static_cast<unsigned char>(mime_type.front()))) {
    mime_type.remove_prefix(1);
  }
  while (!mime_type.empty() && std::isspace(static_cast<unsigned char>(mime_type.back()))) {
    mime_type.remove_suffix(1);
  }
  std::string out(mime_type);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The MIME types whose bytes are shown as text (the original host's list).
bool is_textual(std::string_view m) {
  return m.starts_with("text/") || m == "application/json" || m.ends_with("+json") ||
         m == "application/xml" || m.ends_with("+xml") || m == "application/javascript" ||
         m == "application/x-javascript" || m == "application/yaml" || m == "application/x-yaml";
}

std::string text_block(std::string text) {
  return Content::text(std::move(text)).to_json();
}

// A text block with `text` capped at kMaxEmittedTextChars.
std::string emitted_text_block(std::string_view text) {
  return text_block(truncate(text, kMaxEmittedTextChars));
}

// The blocks for a file: {"type":"file","name","mimeType","data"|"text"}. nullopt when the
// value is not one (a field missing or of the wrong type, or data that is not base64); it
// is then shown as a plain value. When both are given, data is the file and text is ignored.
std::optional<std::vector<std::string>> file_blocks(const rapidjson::Value& value) {
  const rapidjson::Value* type = member(value, "type");
  if (!type || !type->IsString() || string_of(*type) != "file") return std::nullopt;
  if (!is_string_member(value, "name") || !is_string_member(value, "mimeType")) {
    return std::nullopt;
  }
  std::string name = valid_utf8(string_of(value["name"]));
  std::string mime_type = valid_utf8(string_of(value["mimeType"]));
  const std::string mime = essence(mime_type);
  auto summary = [&](std::size_t bytes) {
    return text_block("File output: " + name + " (" + mime_type + ", " + std::to_string(bytes) +
                      " bytes)");
  };

  if (is_string_member(value, "data")) {
    std::string data(string_of(value["data"]));
    std::optional<std::string> bytes = decode_base64(data);
    if (!bytes) return std::nullopt;
    std::vector<std::string> blocks{summary(bytes->size())};
    if (mime.starts_with("image/")) {
      blocks.push_back(Content::image(std::move(data), mime_type).to_json());
    } else if (mime.starts_with("audio/")) {
      blocks.push_back(Content::audio(std::move(data), mime_type).to_json());
    } else if (is_textual(mime)) {
      std::string_view text = *bytes;
      if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // as TextDecoder does
      blocks.push_back(emitted_text_block(valid_utf8(text)));
    } else {
      blocks.push_back(Content::embedded(ResourceContents::blob("file:///" + uri_component(name),
                                                                std::move(data), mime_type))
                           .to_json());
    }
    return blocks;
  }
  if (is_string_member(value, "text")) {
    std::string_view text = string_of(value["text"]);
    return std::vector<std::string>{summary(text.size()), emitted_text_block(text)};
  }
  return std::nullopt;
}

// The content blocks (compact JSON) one emitted value is shown as.
std::vector<std::string> emitted_blocks(const rapidjson::Value& value) {
  if (is_content_block(value)) return {detail::compact(value)};
  if (auto blocks = file_blocks(value)) return std::move(*blocks);
  return {emitted_text_block(value_text(value))};
}

// ---- the result ----

void write_strings(JsonOut& out, const std::vector<std::string>& strings) {
  out.writer().StartArray();
  for (const auto& s : strings) out.string(valid_utf8(s));
  out.writer().EndArray();
}

// {"content":[BLOCKS],"isError":…,"structuredContent":…}, the structured content written
// by `structured` onto the writer.
template <class WriteStructured>
ToolResult call_tool_result(const std::vector<std::string>& blocks, bool is_error,
                            WriteStructured&& structured) {
  JsonOut out;
  out.writer().StartObject();
  out.key("content");
  out.writer().StartArray();
  for (const auto& block : blocks) out.raw(block);
  out.writer().EndArray();
  out.key("isError");
  out.writer().Bool(is_error);
  out.key("structuredContent");
  out.writer().StartObject();
  structured(out);
  out.writer().EndObject();
  out.writer().EndObject();
  return ToolResult{out.text()};
}

std::string items_emitted(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " item" : " items") + " emitted to the user";
}

// Floor division, so that times before 1970 and negative windows round like JavaScript.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

ToolResult format_execution_outcome(const ExecutionOutcome& outcome) {
  const bool failed = outcome.status == ExecutionOutcome::Status::error;
  std::vector<rapidjson::Document> emitted(outcome.emitted_json.size());
  for (std::size_t i = 0; i < emitted.size(); ++i) {
    parse_or_string(outcome.emitted_json[i], emitted[i]);
  }
  rapidjson::Document result;  // null when the code returned nothing
  if (!failed && outcome.result_json) parse_or_string(*outcome.result_json, result);

  // The original joins the parts with "\n" and starts the logs part with "\nLogs:", so a
  // blank line stands between the result and the logs.
  const std::string logs =
      outcome.logs.empty() ? std::string() : "\n\nLogs:\n" + join(outcome.logs, "\n");
  std::string text;
  if (failed) {
    text = truncate("Error: " + valid_utf8(outcome.error) + logs, kMaxResultTextChars);
  } else {
    // null and "" count as no result, as in the original (`result != null`, then a truthy
    // check of the text).
    const bool nothing = result.IsNull() || (result.IsString() && result.GetStringLength() == 0);
    if (!nothing) {
      text = truncate(value_text(result), kMaxResultTextChars);
    } else if (!emitted.empty()) {
      text = "(no return value; " + items_emitted(emitted.size()) + ")";
    } else {
      text = "(no result)";
    }
    text += logs;
  }

  std::vector<std::string> blocks;
  for (const auto& value : emitted) {
    for (auto& block : emitted_blocks(value)) blocks.push_back(std::move(block));
  }
  blocks.push_back(text_block(std::move(text)));

  return call_tool_result(blocks, failed, [&](JsonOut& out) {
    if (failed) {
      out.member("status", "error");
      out.member("error", valid_utf8(outcome.error));
    } else {
      out.member("status", "completed");
      out.key("result");
      result.Accept(out.writer());
    }
    if (!emitted.empty()) {
      out.key("emitted");
      out.writer().StartArray();
      for (const auto& value : emitted) value.Accept(out.writer());
      out.writer().EndArray();
    }
    out.key("logs");
    write_strings(out, outcome.logs);
  });
}

std::string format_ttl(std::int64_t ttl_ms) {
  // Math.round(ttl_ms / 1000): halves round up.
  std::int64_t seconds = floor_div(ttl_ms, 1000);
  if (ttl_ms - seconds * 1000 >= 500) ++seconds;
  seconds = std::max<std::int64_t>(1, seconds);
  if (seconds % 60 == 0) {
    std::int64_t minutes = seconds / 60;
    return std::to_string(minutes) + (minutes == 1 ? " minute" : " minutes");
  }
  return std::to_string(seconds) + (seconds == 1 ? " second" : " seconds");
}

std::string iso8601_utc(std::int64_t unix_ms) {
  using namespace std::chrono;
  constexpr std::int64_t kFirst = -62'167'219'200'000;  // 0000-01-01T00:00:00.000Z
  constexpr std::int64_t kLast = 253'402'300'799'999;   // 9999-12-31T23:59:59.999Z
  sys_time<milliseconds> t{milliseconds{std::clamp(unix_ms, kFirst, kLast)}};
  sys_days day = floor<days>(t);
  year_month_day date{day};
  hh_mm_ss time{t - day};
  char buf[64];  // room for any int the compiler cannot bound (no -Wformat-truncation)
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", int(date.year()),
                unsigned(date.month()), unsigned(date.day()), int(time.hours().count()),
                int(time.minutes().count()), int(time.seconds().count()),
                int(time.subseconds().count()));
  return buf;
}

ToolResult format_paused_execution(const PausedExecution& paused) {
  rapidjson::Document args;
  parse_or_string(paused.args_json, args);
  rapidjson::Document schema;
  const bool schema_ok =
      !detail::parse_json(paused.requested_schema_json, schema) && schema.IsObject();
  if (!schema_ok) schema.SetObject();

  std::int64_t expires_ms = 0;
  if (__builtin_add_overflow(paused.now_ms, paused.ttl_ms, &expires_ms)) {
    expires_ms = paused.ttl_ms < 0 ? std::numeric_limits<std::int64_t>::min()
                                   : std::numeric_limits<std::int64_t>::max();
  }
  const std::string expires_at = iso8601_utc(expires_ms);
  const std::string id = valid_utf8(paused.execution_id);
  const std::string message = valid_utf8(paused.message);
  const std::string instructions = valid_utf8(paused.instructions);
  const std::string address = valid_utf8(paused.address);

  std::string text = "Execution paused: " + message + "\nexecutionId: " + id +
                     "\ntool: " + address + "\nargs: " + js_compact(args) +
                     "\nresumeDeadline: " + expires_at + " (" + format_ttl(paused.ttl_ms) +
                     " approval window)";
  if (!schema_ok) text += "\nrequestedSchema: not a JSON object, sent as {}";
  text += "\ninstructions: " + instructions;
  if (paused.approval_url) text += "\napprovalUrl: " + valid_utf8(*paused.approval_url);

  return call_tool_result({text_block(std::move(text))}, false, [&](JsonOut& out) {
    out.member("status", "waiting_for_interaction");
    out.member("executionId", id);
    out.member("expiresAt", expires_at);
    out.key("ttlMs");
    out.writer().Int64(paused.ttl_ms);
    out.key("interaction");
    out.writer().StartObject();
    out.member("kind", "form");
    out.member("message", message);
    out.member("instructions", instructions);
    out.member("address", address);
    out.key("args");
    args.Accept(out.writer());
    out.key("requestedSchema");
    schema.Accept(out.writer());
    out.writer().EndObject();
    if (paused.approval_url) out.member("approvalUrl", valid_utf8(*paused.approval_url));
  });
}

std::string_view to_string(ResumeUnavailable why) {
  switch (why) {
    case ResumeUnavailable::execution_not_found:
      return "execution_not_found";
    case ResumeUnavailable::execution_expired:
      return "execution_expired";
    case ResumeUnavailable::execution_forbidden:
      return "execution_forbidden";
    case ResumeUnavailable::execution_already_settled:
      return "execution_already_settled";
  }
  return "execution_not_found";
}

ToolResult format_resume_unavailable(ResumeUnavailable why, std::string_view execution_id,
                                     std::int64_t ttl_ms) {
  static constexpr std::string_view kReExecute =
      "to recover, run the execute tool again with the original code; if it pauses, use the "
      "fresh executionId it gets.";
  const std::string id = valid_utf8(execution_id);
  std::string what;
  switch (why) {
    case ResumeUnavailable::execution_not_found:
      what = "No paused execution has this id (its window passed, or it never existed): ";
      what += kReExecute;
      break;
    case ResumeUnavailable::execution_expired:
      what = "Its approval window of " + format_ttl(ttl_ms) + " has passed: ";
      what += kReExecute;
      break;
    case ResumeUnavailable::execution_forbidden:
      what =
          "It belongs to another user: only the account that started the execution can "
          "resume it.";
      break;
    case ResumeUnavailable::execution_already_settled:
      what =
          "It has finished already and its result is not kept for replay: run the execute "
          "tool again only if the result is still needed.";
      break;
  }
  std::string text = "Cannot resume " + id + ": " + std::string(to_string(why)) + ". " + what;
  return call_tool_result({text_block(std::move(text))}, true, [&](JsonOut& out) {
    out.member("status", to_string(why));
    out.member("executionId", id);
    if (why == ResumeUnavailable::execution_expired) {
      out.key("ttlMs");
      out.writer().Int64(ttl_ms);
    }
    if (why != ResumeUnavailable::execution_forbidden) out.member("recovery", "re_execute");
  });
}

ToolResult format_internal_error(std::string_view correlation_id) {
  const std::string message = "Internal tool error [" + valid_utf8(correlation_id) + "]";
  return call_tool_result({text_block("Error: " + message)}, true, [&](JsonOut& out) {
    out.member("status", "error");
    out.member("error", message);
  });
}

}  // namespace dorm::mcp
