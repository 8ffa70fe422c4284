#include <rapidjson/document.h>

#include "dorm/mcp/tool.hpp"
#include "json_out.hpp"
#include "json_text.hpp"

namespace dorm::mcp {

ToolResult ToolResult::text(std::string_view text, bool is_error) {
  return of({Content::text(std::string(text))}, is_error);
}

ToolResult ToolResult::of(const std::vector<Content>& content, bool is_error,
                          std::optional<std::string> structured_content_json) {
  if (structured_content_json) {
    rapidjson::Document doc;
    if (detail::parse_json(*structured_content_json, doc) || !doc.IsObject()) {
      return error("the tool's structuredContent is not a JSON object");
    }
  }
  detail::JsonOut out;
  out.writer().StartObject();
  if (content.empty() && structured_content_json) {
    out.raw_member("content", content_array_json({Content::text(*structured_content_json)}),
                   rapidjson::kArrayType);
  } else {
    out.raw_member("content", content_array_json(content), rapidjson::kArrayType);
  }
  out.key("isError");
  out.writer().Bool(is_error);
  if (structured_content_json) out.raw_member("structuredContent", *structured_content_json);
  out.writer().EndObject();
  return ToolResult{out.text()};
}

}  // namespace dorm::mcp
