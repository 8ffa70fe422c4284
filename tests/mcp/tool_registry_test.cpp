// ToolRegistry: what add() refuses, exposure, argument validation on draft-04, pages.
#include "dorm/mcp/tool_registry.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

using namespace dorm;
using namespace dorm::mcp;

namespace {

ToolSpec tool(std::string name, Exposure exposure = Exposure::both) {
  ToolSpec t;
  t.name = std::move(name);
  t.description = "d";
  t.exposure = exposure;
  t.handler = [](std::shared_ptr<ToolContext> ctx) { ctx->finish(ToolResult::text("ok")); };
  return t;
}

std::vector<std::string> names(const std::string& tools_json) {
  rapidjson::Document doc;
  doc.Parse(tools_json.c_str());
  REQUIRE(doc.IsArray());
  std::vector<std::string> out;
  for (const auto& t : doc.GetArray()) out.push_back(t["name"].GetString());
  return out;
}

}  // namespace

TEST_CASE("tool registry: bad names, duplicates, missing handlers and non-object schemas are refused") {
  ToolRegistry r;
  REQUIRE(r.add(tool("ok.tool-1_x")).ok());
  auto dup = r.add(tool("ok.tool-1_x"));
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().message == "tool 'ok.tool-1_x': already registered");
  for (const char* bad : {"", "has space", "slash/name", "ü"}) {
    CAPTURE(bad);
    CHECK_FALSE(r.add(tool(bad)).ok());
  }
  CHECK_FALSE(r.add(tool(std::string(129, 'a'))).ok());
  auto no_handler = tool("h");
  no_handler.handler = nullptr;
  CHECK(r.add(std::move(no_handler)).error().message == "tool 'h': no handler");
  auto schema = tool("s");
  schema.input_schema = "[1]";
  CHECK(r.add(std::move(schema)).error().message == "tool 's': inputSchema is not a JSON object");
  auto out = tool("o");
  out.output_schema = "{";
  CHECK_FALSE(r.add(std::move(out)).ok());
  auto ann = tool("a");
  ann.annotations = "true";
  CHECK_FALSE(r.add(std::move(ann)).ok());
  CHECK(r.size() == 1);
}

TEST_CASE("tool registry: exposure decides who finds and lists a tool") {
  ToolRegistry r;
  REQUIRE(r.add(tool("both")).ok());
  REQUIRE(r.add(tool("clients", Exposure::clients)).ok());
  REQUIRE(r.add(tool("code", Exposure::code)).ok());
  CHECK(r.find("both"));
  CHECK(r.find("clients"));
  CHECK_FALSE(r.find("code"));
  CHECK(r.find("code", Exposure::code));
  CHECK_FALSE(r.find("clients", Exposure::code));
  CHECK(names(r.list(std::nullopt, 10)->tools_json) == std::vector<std::string>{"both", "clients"});
  CHECK(names(r.list(std::nullopt, 10, Exposure::code)->tools_json) == std::vector<std::string>{"both", "code"});
}

TEST_CASE("tool registry: schemas are listed byte for byte; pages chain by cursor; a bad cursor fails") {
  ToolRegistry r;
  auto t = tool("first");
  t.title = "First";
  t.input_schema = R"({"type": "object",  "properties": {"a": {"type": "integer"}}, "$defs": {"x": {}}})";
  t.output_schema = R"({"type":"object"})";
  t.annotations = R"({"readOnlyHint": true})";
  REQUIRE(r.add(std::move(t)).ok());
  for (const char* n : {"b", "c", "d", "e"}) REQUIRE(r.add(tool(n)).ok());
  auto first = r.list(std::nullopt, 2);
  REQUIRE(first.ok());
  CHECK(first->tools_json.find(R"("inputSchema":{"type": "object",  "properties": {"a": {"type": "integer"}}, "$defs": {"x": {}}})") !=
        std::string::npos);
  CHECK(first->tools_json.find(R"("title":"First")") != std::string::npos);
  CHECK(first->tools_json.find(R"("annotations":{"readOnlyHint": true})") != std::string::npos);
  std::vector<std::string> all = names(first->tools_json);
  auto cursor = first->next_cursor;
  while (cursor) {
    auto page = r.list(*cursor, 2);
    REQUIRE(page.ok());
    for (auto& n : names(page->tools_json)) all.push_back(n);
    cursor = page->next_cursor;
  }
  CHECK(all == std::vector<std::string>{"first", "b", "c", "d", "e"});
  for (const char* bad : {"", "zz", "0", "6e6f6e65"}) {
    CAPTURE(bad);
    auto page = r.list(std::string_view(bad), 2);
    REQUIRE_FALSE(page.ok());
    CHECK(page.error().message == "invalid cursor");
  }
}

TEST_CASE("tool registry: arguments are validated on draft-04 and the error says where") {
  ToolRegistry r;
  auto t = tool("v");
  t.input_schema =
      R"({"type":"object","properties":{"n":{"type":"integer","minimum":1},"s":{"type":"string"}},"required":["n"],"additionalProperties":false})";
  REQUIRE(r.add(std::move(t)).ok());
  const auto* entry = r.find("v");
  REQUIRE(entry);
  CHECK(r.validate_arguments(*entry, R"({"n":3,"s":"x"})").ok());
  auto missing = r.validate_arguments(*entry, R"({"s":"x"})");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("'required'") != std::string::npos);
  auto small = r.validate_arguments(*entry, R"({"n":0})");
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().message.find("'minimum' fails at '/n'") != std::string::npos);
  CHECK_FALSE(r.validate_arguments(*entry, R"({"n":1,"extra":true})").ok());
  CHECK(r.validate_arguments(*entry, "[1]").error().message == "arguments must be a JSON object");
  CHECK(ToolResult::error("boom").json == R"({"content":[{"type":"text","text":"boom"}],"isError":true})");
}
