// ResourceRegistry: what add() refuses, pages and cursors, reads of fixed and template
// resources (variables, storage, handler errors), completion lookups, capability flags.
#include "dorm/mcp/resource_registry.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <stdexcept>

#include "map_tool_storage.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

ResourceReader text_reader(std::string text) {
  return [text](const ResourceRead&) -> Result<std::vector<ResourceContents>> {
    return std::vector<ResourceContents>{ResourceContents::text("", text, "text/plain")};
  };
}

ResourceSpec resource(std::string uri) {
  ResourceSpec r;
  r.uri = std::move(uri);
  r.name = "n";
  r.read = text_reader("t");
  return r;
}

ResourceTemplateSpec templ(std::string text) {
  ResourceTemplateSpec t;
  t.uri_template = std::move(text);
  t.name = "n";
  t.read = text_reader("t");
  return t;
}

std::vector<std::string> field(const std::string& json, const char* key) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  REQUIRE(doc.IsArray());
  std::vector<std::string> out;
  for (const auto& r : doc.GetArray()) out.push_back(r[key].GetString());
  return out;
}

}  // namespace

TEST_CASE("resource registry: bad URIs, duplicates, missing names and handlers are refused") {
  ResourceRegistry r;
  CHECK(r.empty());
  CHECK_FALSE(r.supports_subscribe());
  REQUIRE(r.add(resource("test://a")).ok());
  CHECK(r.add(resource("test://a")).error().message == "resource 'test://a': already registered");
  for (const char* bad : {"", "no-scheme", ":x", "1x:y", "a b:c"}) {
    CAPTURE(bad);
    auto added = r.add(resource(bad));
    REQUIRE_FALSE(added.ok());
    CHECK(added.error().code == ErrorCode::invalid_argument);
  }
  CHECK_FALSE(r.add(resource("test://" + std::string(2048, 'x'))).ok());
  auto nameless = resource("test://b");
  nameless.name.clear();
  CHECK(r.add(std::move(nameless)).error().message == "resource 'test://b': no name");
  auto no_reader = resource("test://c");
  no_reader.read = nullptr;
  CHECK(r.add(std::move(no_reader)).error().message == "resource 'test://c': no read handler");

  CHECK(r.add_template(templ("test://t/{a")).error().message ==
        "URI template 'test://t/{a': an unclosed '{' at offset 9");
  REQUIRE(r.add_template(templ("test://t/{id}")).ok());
  CHECK(r.add_template(templ("test://t/{id}")).error().message ==
        "resource template 'test://t/{id}': already registered");
  auto completer = templ("test://u/{id}");
  completer.completions["other"] = [](std::string_view, const CompletionArguments&) {
    return std::vector<std::string>{};
  };
  CHECK(r.add_template(std::move(completer)).error().message ==
        "resource template 'test://u/{id}': a completer for 'other', which the template does "
        "not have");
  CHECK(r.size() == 1);
  CHECK(r.template_count() == 1);
  CHECK(r.supports_subscribe());
  CHECK_FALSE(r.empty());

  ResourceRegistry only_templates;
  REQUIRE(only_templates.add_template(templ("test://t/{id}")).ok());
  CHECK_FALSE(only_templates.empty());
  CHECK_FALSE(only_templates.supports_subscribe());
}

TEST_CASE("resource registry: resources and templates page by cursor; a bad cursor fails") {
  ResourceRegistry r;
  auto first = resource("test://1");
  first.title = "One";
  first.description = "the first";
  first.mime_type = "text/plain";
  first.size = 42;
  Annotations a;
  a.audience = {"user"};
  a.priority = 1;
  first.annotations = a;
  REQUIRE(r.add(std::move(first)).ok());
  for (int i = 2; i <= 5; ++i) REQUIRE(r.add(resource("test://" + std::to_string(i))).ok());
  auto page = r.list(std::nullopt, 2);
  REQUIRE(page.ok());
  CHECK(page->items_json.starts_with(
      R"([{"uri":"test://1","name":"n","title":"One","description":"the first","mimeType":"text/plain","size":42,"annotations":{"audience":["user"],"priority":1.0}},{"uri":"test://2","name":"n"}])"));
  std::vector<std::string> all = field(page->items_json, "uri");
  while (page->next_cursor) {
    page = r.list(*page->next_cursor, 2);
    REQUIRE(page.ok());
    for (auto& uri : field(page->items_json, "uri")) all.push_back(uri);
  }
  CHECK(all == std::vector<std::string>{"test://1", "test://2", "test://3", "test://4", "test://5"});
  for (const char* bad : {"", "zz", "0", "6e6f6e65"}) {
    CAPTURE(bad);
    auto failed = r.list(std::string_view(bad), 2);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().code == ErrorCode::invalid_argument);
    CHECK(failed.error().message == "invalid cursor");
  }

  auto t1 = templ("test://t/{a}");
  t1.title = "T";
  t1.mime_type = "application/json";
  REQUIRE(r.add_template(std::move(t1)).ok());
  REQUIRE(r.add_template(templ("test://u/{+b}")).ok());
  REQUIRE(r.add_template(templ("test://v/{c}")).ok());
  auto templates = r.list_templates(std::nullopt, 2);
  REQUIRE(templates.ok());
  CHECK(templates->items_json ==
        R"([{"uriTemplate":"test://t/{a}","name":"n","title":"T","mimeType":"application/json"},{"uriTemplate":"test://u/{+b}","name":"n"}])");
  REQUIRE(templates->next_cursor);
  auto rest = r.list_templates(*templates->next_cursor, 2);
  REQUIRE(rest.ok());
  CHECK(field(rest->items_json, "uriTemplate") == std::vector<std::string>{"test://v/{c}"});
  CHECK_FALSE(rest->next_cursor);
  // A resource cursor names no template.
  CHECK_FALSE(r.list_templates(*r.list(std::nullopt, 1)->next_cursor, 2).ok());
  CHECK(ResourceRegistry().list(std::nullopt, 10)->items_json == "[]");
}

TEST_CASE("resource registry: read finds fixed resources, then templates, with their variables") {
  ResourceRegistry r;
  testing::MapToolStorage storage;
  storage.data["greeting"] = "hello";
  auto fixed = resource("test://static/text");
  fixed.read = [](const ResourceRead& read) -> Result<std::vector<ResourceContents>> {
    auto greeting = read.storage.get("greeting");
    REQUIRE(greeting.ok());
    CHECK(read.variables.empty());
    return std::vector<ResourceContents>{ResourceContents::text("", **greeting, "text/plain")};
  };
  REQUIRE(r.add(std::move(fixed)).ok());
  auto blob = resource("test://static/blob");
  blob.read = [](const ResourceRead& read) -> Result<std::vector<ResourceContents>> {
    return std::vector<ResourceContents>{
        ResourceContents::blob(std::string(read.uri), "AAEC/w==", "application/octet-stream")};
  };
  REQUIRE(r.add(std::move(blob)).ok());
  auto data = templ("test://template/{id}/data");
  data.read = [](const ResourceRead& read) -> Result<std::vector<ResourceContents>> {
    if (read.variables.at("id") == "missing") return Error{ErrorCode::not_found, "gone"};
    if (read.variables.at("id") == "throw") throw std::runtime_error("disk on fire");
    return std::vector<ResourceContents>{
        ResourceContents::text("", "id=" + read.variables.at("id")),
        ResourceContents::text("test://template/" + read.variables.at("id") + "/meta", "m")};
  };
  REQUIRE(r.add_template(std::move(data)).ok());
  // A template that also matches the fixed URI: the fixed resource wins.
  REQUIRE(r.add_template(templ("test://static/{name}")).ok());

  CHECK(*r.read("test://static/text", storage) ==
        R"({"contents":[{"uri":"test://static/text","mimeType":"text/plain","text":"hello"}]})");
  CHECK(*r.read("test://static/blob", storage) ==
        R"({"contents":[{"uri":"test://static/blob","mimeType":"application/octet-stream","blob":"AAEC/w=="}]})");
  CHECK(*r.read("test://template/123/data", storage) ==
        R"({"contents":[{"uri":"test://template/123/data","text":"id=123"},{"uri":"test://template/123/meta","text":"m"}]})");
  CHECK(*r.read("test://static/other", storage) ==
        R"({"contents":[{"uri":"test://static/other","mimeType":"text/plain","text":"t"}]})");

  CHECK(r.contains("test://static/blob"));
  CHECK(r.contains("test://template/9/data"));
  CHECK_FALSE(r.contains("test://template/1/2/data"));
  CHECK_FALSE(ResourceRegistry().contains("test://static/blob"));

  auto unknown = r.read("test://template/1/2/data", storage);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::not_found);
  CHECK(unknown.error().message == "unknown resource: test://template/1/2/data");
  auto gone = r.read("test://template/missing/data", storage);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ErrorCode::not_found);
  auto threw = r.read("test://template/throw/data", storage);
  REQUIRE_FALSE(threw.ok());
  CHECK(threw.error().code == ErrorCode::internal);
  CHECK(threw.error().message ==
        "the read handler of 'test://template/throw/data' threw: disk on fire");
}

TEST_CASE("resource registry: completion looks up the template and the variable") {
  ResourceRegistry r;
  auto t = templ("test://repo/{owner}/{name}");
  t.completions["name"] = [](std::string_view value, const CompletionArguments& context) {
    std::vector<std::string> out;
    for (std::string n : {"dorm", "docs", "demo"}) {
      if (n.starts_with(value)) out.push_back(context.at("owner") + "-" + n);
    }
    return out;
  };
  REQUIRE(r.add_template(std::move(t)).ok());
  CompletionArguments context{{"owner", "me"}};
  CHECK(*r.complete("test://repo/{owner}/{name}", "name", "do", context) ==
        std::vector<std::string>{"me-dorm", "me-docs"});
  CHECK(r.complete("test://repo/{owner}/{name}", "owner", "m", context)->empty());
  auto no_variable = r.complete("test://repo/{owner}/{name}", "nope", "", context);
  REQUIRE_FALSE(no_variable.ok());
  CHECK(no_variable.error().message ==
        "resource template 'test://repo/{owner}/{name}': no variable 'nope'");
  auto no_template = r.complete("test://other/{x}", "x", "", context);
  REQUIRE_FALSE(no_template.ok());
  CHECK(no_template.error().code == ErrorCode::invalid_argument);
  CHECK(no_template.error().message == "unknown resource template: test://other/{x}");
}
