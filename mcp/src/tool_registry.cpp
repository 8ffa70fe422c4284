#include "dorm/mcp/tool_registry.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "json_out.hpp"
#include "paging.hpp"

namespace dorm::mcp {

struct ToolRegistry::Entry {
  ToolSpec spec;
  std::unique_ptr<rapidjson::SchemaDocument> input_schema;
  std::unique_ptr<rapidjson::SchemaDocument> output_schema;  // null: the tool has none
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

// Why a document failed `validator`: the keyword, where in the document, where in the schema.
std::string schema_mismatch(const rapidjson::SchemaValidator& validator) {
  rapidjson::StringBuffer where;
  validator.GetInvalidSchemaPointer().StringifyUriFragment(where);
  rapidjson::StringBuffer what;
  validator.GetInvalidDocumentPointer().StringifyUriFragment(what);
  std::string at = what.GetSize() > 1 ? std::string(what.GetString() + 1, what.GetSize() - 1) : "";
  return "'" + std::string(validator.GetInvalidSchemaKeyword()) + "' fails at " +
         (at.empty() ? std::string("the top level") : "'" + at + "'") + " (schema " +
         std::string(where.GetString(), where.GetSize()) + ")";
}

std::unique_ptr<rapidjson::SchemaDocument> compile(const std::string& schema_json) {
  rapidjson::Document schema;
  schema.Parse(schema_json.data(), schema_json.size());
  return std::make_unique<rapidjson::SchemaDocument>(schema);
}

}  // namespace

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
  auto entry = std::make_unique<Entry>();
  entry->input_schema = compile(spec.input_schema);
  if (!spec.output_schema.empty()) entry->output_schema = compile(spec.output_schema);
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
  return Error{ErrorCode::invalid_argument,
               "arguments do not match the input schema: " + schema_mismatch(validator)};
}

Result<void> ToolRegistry::check_structured(const Entry& entry, const ToolResult& result) const {
  if (!entry.output_schema) return {};
  rapidjson::Document doc;
  doc.Parse(result.json.data(), result.json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Error{ErrorCode::invalid_argument, "the result is not a JSON object"};
  }
  if (doc.HasMember("isError") && doc["isError"].IsBool() && doc["isError"].GetBool()) return {};
  if (!doc.HasMember("structuredContent")) {
    return Error{ErrorCode::invalid_argument,
                 "tool '" + entry.spec.name +
                     "' has an output schema but its result has no structuredContent"};
  }
  rapidjson::SchemaValidator validator(*entry.output_schema);
  if (doc["structuredContent"].Accept(validator)) return {};
  return Error{ErrorCode::invalid_argument, "tool '" + entry.spec.name +
                                                "': structuredContent does not match the "
                                                "output schema: " +
                                                schema_mismatch(validator)};
}

Result<ToolRegistry::Page> ToolRegistry::list(std::optional<std::string_view> cursor,
                                              std::size_t page_size, Exposure audience) const {
  detail::JsonOut out;
  out.writer().StartArray();
  auto visible = [&](std::size_t i) -> std::optional<std::string_view> {
    const auto& spec = entries_[i]->spec;
    if (!exposed(spec.exposure, audience)) return std::nullopt;
    return spec.name;
  };
  auto write = [&](std::size_t i) {
    const auto& spec = entries_[i]->spec;
    out.writer().StartObject();
    out.member("name", spec.name);
    out.optional_member("title", spec.title);
    out.member("description", spec.description);
    out.raw_member("inputSchema", spec.input_schema);
    if (!spec.output_schema.empty()) out.raw_member("outputSchema", spec.output_schema);
    if (!spec.annotations.empty()) out.raw_member("annotations", spec.annotations);
    out.writer().EndObject();
  };
  auto next = detail::walk_page(entries_.size(), cursor, page_size, visible, write);
  if (!next) return std::move(next).error();
  out.writer().EndArray();
  return Page{out.text(), std::move(*next)};
}

std::size_t ToolRegistry::size() const { return entries_.size(); }

}  // namespace dorm::mcp
