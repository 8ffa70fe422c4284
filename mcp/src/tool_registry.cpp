#include "dorm/mcp/tool_registry.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace dorm::mcp {

struct ToolRegistry::Entry {
  ToolSpec spec;
  std::unique_ptr<rapidjson::SchemaDocument> input_schema;
};

namespace {

Error bad_tool(std::string_view name, std::string_view why) {
  return Error{ErrorCode::invalid_argument, "tool '" + std::string(name) + "': " + std::string(why)};
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool is_json_object(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  return !doc.HasParseError() && doc.IsObject();
}

bool exposed(Exposure tool, Exposure audience) {
  return tool == Exposure::both || tool == audience;
}

// Cursors name the next tool, hex-encoded: opaque to clients, stable while the registry
// does not change, and checkable.
std::string to_cursor(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : name) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

std::optional<std::string> from_cursor(std::string_view cursor) {
  if (cursor.empty() || cursor.size() % 2 != 0 || cursor.size() > 256) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < cursor.size(); i += 2) {
    int hi = digit(cursor[i]);
    int lo = digit(cursor[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace

ToolResult ToolResult::text(std::string_view text, bool is_error) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("content");
  w.StartArray();
  w.StartObject();
  w.Key("type");
  w.String("text");
  w.Key("text");
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  w.EndObject();
  w.EndArray();
  w.Key("isError");
  w.Bool(is_error);
  w.EndObject();
  return ToolResult{std::string(buffer.GetString(), buffer.GetSize())};
}

ToolRegistry::ToolRegistry() = default;
ToolRegistry::~ToolRegistry() = default;

Result<void> ToolRegistry::add(ToolSpec spec) {
  if (!valid_name(spec.name)) return bad_tool(spec.name, "a name is 1-128 of [A-Za-z0-9_.-]");
  for (const auto& e : entries_) {
    if (e->spec.name == spec.name) return bad_tool(spec.name, "already registered");
  }
  if (!spec.handler) return bad_tool(spec.name, "no handler");
  if (!is_json_object(spec.input_schema)) return bad_tool(spec.name, "inputSchema is not a JSON object");
  if (!spec.output_schema.empty() && !is_json_object(spec.output_schema)) {
    return bad_tool(spec.name, "outputSchema is not a JSON object");
  }
  if (!spec.annotations.empty() && !is_json_object(spec.annotations)) {
    return bad_tool(spec.name, "annotations is not a JSON object");
  }
  rapidjson::Document schema;
  schema.Parse(spec.input_schema.data(), spec.input_schema.size());
  auto entry = std::make_unique<Entry>();
  entry->input_schema = std::make_unique<rapidjson::SchemaDocument>(schema);
  entry->spec = std::move(spec);
  entries_.push_back(std::move(entry));
  return {};
}

const ToolRegistry::Entry* ToolRegistry::find(std::string_view name, Exposure audience) const {
  for (const auto& e : entries_) {
    if (e->spec.name == name) return exposed(e->spec.exposure, audience) ? e.get() : nullptr;
  }
  return nullptr;
}

const ToolSpec& ToolRegistry::spec(const Entry& entry) const { return entry.spec; }

Result<void> ToolRegistry::validate_arguments(const Entry& entry,
                                              std::string_view arguments_json) const {
  rapidjson::Document args;
  args.Parse(arguments_json.data(), arguments_json.size());
  if (args.HasParseError() || !args.IsObject()) {
    return Error{ErrorCode::invalid_argument, "arguments must be a JSON object"};
  }
  rapidjson::SchemaValidator validator(*entry.input_schema);
  if (args.Accept(validator)) return {};
  rapidjson::StringBuffer where;
  validator.GetInvalidSchemaPointer().StringifyUriFragment(where);
  rapidjson::StringBuffer what;
  validator.GetInvalidDocumentPointer().StringifyUriFragment(what);
  std::string at = what.GetSize() > 1 ? std::string(what.GetString() + 1, what.GetSize() - 1) : "";
  return Error{ErrorCode::invalid_argument,
               "arguments do not match the input schema: '" +
                   std::string(validator.GetInvalidSchemaKeyword()) + "' fails at " +
                   (at.empty() ? std::string("the top level") : "'" + at + "'") +
                   " (schema " + std::string(where.GetString(), where.GetSize()) + ")"};
}

Result<ToolRegistry::Page> ToolRegistry::list(std::optional<std::string_view> cursor,
                                              std::size_t page_size, Exposure audience) const {
  std::size_t start = 0;
  if (cursor) {
    auto name = from_cursor(*cursor);
    bool found = false;
    if (name) {
      for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i]->spec.name == *name && exposed(entries_[i]->spec.exposure, audience)) {
          start = i;
          found = true;
          break;
        }
      }
    }
    if (!found) return Error{ErrorCode::invalid_argument, "invalid cursor"};
  }
  if (page_size == 0) page_size = 1;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto raw = [&](const char* key, const std::string& json) {
    w.Key(key);
    w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
  };
  auto str = [&](const char* key, const std::string& s) {
    w.Key(key);
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  Page page;
  std::size_t listed = 0;
  w.StartArray();
  for (std::size_t i = start; i < entries_.size(); ++i) {
    const auto& spec = entries_[i]->spec;
    if (!exposed(spec.exposure, audience)) continue;
    if (listed == page_size) {
      page.next_cursor = to_cursor(spec.name);
      break;
    }
    w.StartObject();
    str("name", spec.name);
    if (!spec.title.empty()) str("title", spec.title);
    str("description", spec.description);
    raw("inputSchema", spec.input_schema);
    if (!spec.output_schema.empty()) raw("outputSchema", spec.output_schema);
    if (!spec.annotations.empty()) raw("annotations", spec.annotations);
    w.EndObject();
    ++listed;
  }
  w.EndArray();
  page.tools_json.assign(buffer.GetString(), buffer.GetSize());
  return page;
}

std::size_t ToolRegistry::size() const { return entries_.size(); }

}  // namespace dorm::mcp
