// Content blocks and ToolResult::of as JSON text; check_structured against output schemas.
#include "dorm/mcp/content.hpp"

#include <doctest/doctest.h>

#include "dorm/mcp/tool.hpp"
#include "dorm/mcp/tool_registry.hpp"

using namespace dorm;
using namespace dorm::mcp;

TEST_CASE("content: each kind of block, with and without annotations") {
  CHECK(Content::text("hi \"there\"").to_json() == R"({"type":"text","text":"hi \"there\""})");
  CHECK(Content::image("iVBORw0KGgo=", "image/png").to_json() ==
        R"({"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"})");
  CHECK(Content::audio("UklGRg==", "audio/wav").to_json() ==
        R"({"type":"audio","data":"UklGRg==","mimeType":"audio/wav"})");
  CHECK(Content::embedded(ResourceContents::text("test://a", "A", "text/plain")).to_json() ==
        R"({"type":"resource","resource":{"uri":"test://a","mimeType":"text/plain","text":"A"}})");
  // Base64 is listed as given, not decoded or re-encoded.
  CHECK(Content::embedded(ResourceContents::blob("test://b", "AAEC/w==")).to_json() ==
        R"({"type":"resource","resource":{"uri":"test://b","blob":"AAEC/w=="}})");
  ResourceLink link{"test://c", "c", "C", "the c", "text/markdown", 12};
  CHECK(Content::link(link).to_json() ==
        R"({"type":"resource_link","uri":"test://c","name":"c","title":"C","description":"the c","mimeType":"text/markdown","size":12})");
  CHECK(Content::link(ResourceLink{"test://d", "d", {}, {}, {}, {}}).to_json() ==
        R"({"type":"resource_link","uri":"test://d","name":"d"})");
  Annotations a;
  a.audience = {"user", "assistant"};
  a.priority = 0.5;
  a.last_modified = "2025-01-12T15:00:58Z";
  CHECK(Content::text("x").annotated(a).to_json() ==
        R"({"type":"text","text":"x","annotations":{"audience":["user","assistant"],"priority":0.5,"lastModified":"2025-01-12T15:00:58Z"}})");
  CHECK(Annotations{}.to_json() == "{}");
  CHECK(content_array_json({}) == "[]");
  CHECK(content_array_json({Content::text("a"), Content::text("b")}) ==
        R"([{"type":"text","text":"a"},{"type":"text","text":"b"}])");
}

TEST_CASE("tool result: of() lists blocks, the error flag and structured content") {
  CHECK(ToolResult::text("ok").json == R"({"content":[{"type":"text","text":"ok"}],"isError":false})");
  CHECK(ToolResult::of({Content::text("a"), Content::image("AA==", "image/png")}, true).json ==
        R"({"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":true})");
  CHECK(ToolResult::of({Content::text("n=1")}, false, R"({"n":1})").json ==
        R"({"content":[{"type":"text","text":"n=1"}],"isError":false,"structuredContent":{"n":1}})");
  // Structured content alone is also given as text, for clients that read only content.
  CHECK(ToolResult::of({}, false, R"({"n":1})").json ==
        R"({"content":[{"type":"text","text":"{\"n\":1}"}],"isError":false,"structuredContent":{"n":1}})");
  CHECK(ToolResult::of({}, false, "[1]").json ==
        ToolResult::error("the tool's structuredContent is not a JSON object").json);
  CHECK(ToolResult::of({}, false, "{").json ==
        ToolResult::error("the tool's structuredContent is not a JSON object").json);
  CHECK(ToolResult::of({}).json == R"({"content":[],"isError":false})");
}

TEST_CASE("tool registry: check_structured holds results to the output schema") {
  ToolRegistry r;
  ToolSpec spec;
  spec.name = "sum";
  spec.description = "d";
  spec.output_schema = R"({"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]})";
  spec.handler = [](std::shared_ptr<ToolContext>) {};
  REQUIRE(r.add(spec).ok());
  spec.name = "free";
  spec.output_schema.clear();
  REQUIRE(r.add(spec).ok());
  const auto* sum = r.find("sum");
  const auto* free = r.find("free");
  REQUIRE(sum);
  REQUIRE(free);

  CHECK(r.check_structured(*sum, ToolResult::of({}, false, R"({"sum":3})")).ok());
  auto wrong = r.check_structured(*sum, ToolResult::of({}, false, R"({"sum":"3"})"));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == ErrorCode::invalid_argument);
  CHECK(wrong.error().message.starts_with(
      "tool 'sum': structuredContent does not match the output schema: 'type' fails at '/sum'"));
  auto missing = r.check_structured(*sum, ToolResult::text("3"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message ==
        "tool 'sum' has an output schema but its result has no structuredContent");
  // Error results need no structured content; tools without a schema always pass.
  CHECK(r.check_structured(*sum, ToolResult::error("boom")).ok());
  CHECK(r.check_structured(*free, ToolResult::text("anything")).ok());
}
