// PromptRegistry: what add() refuses, pages, get() with argument checks (unknown prompt,
// missing required argument named, non-string values), message builders, completion.
#include "dorm/mcp/prompt_registry.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <stdexcept>

#include "map_tool_storage.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

PromptSpec prompt(std::string name) {
  PromptSpec p;
  p.name = std::move(name);
  p.handler = [](const PromptGet& get) -> Result<std::string> {
    std::string text = std::string(get.name) + ":";
    for (const auto& [k, v] : get.arguments) text += " " + k + "=" + v;
    return prompt_result({PromptMessage::user(Content::text(text))});
  };
  return p;
}

std::vector<std::string> names(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  REQUIRE(doc.IsArray());
  std::vector<std::string> out;
  for (const auto& p : doc.GetArray()) out.push_back(p["name"].GetString());
  return out;
}

}  // namespace

TEST_CASE("prompt registry: bad names, duplicates, bad arguments and missing handlers are refused") {
  PromptRegistry r;
  CHECK(r.empty());
  REQUIRE(r.add(prompt("simple")).ok());
  CHECK(r.add(prompt("simple")).error().message == "prompt 'simple': already registered");
  CHECK_FALSE(r.add(prompt("")).ok());
  CHECK_FALSE(r.add(prompt(std::string(129, 'p'))).ok());
  auto unnamed = prompt("a");
  unnamed.arguments = {{"", {}, {}, false, {}}};
  CHECK(r.add(std::move(unnamed)).error().message == "prompt 'a': an argument has no name");
  auto twice = prompt("b");
  twice.arguments = {{"x", {}, {}, false, {}}, {"x", {}, {}, true, {}}};
  CHECK(r.add(std::move(twice)).error().message == "prompt 'b': argument 'x' is declared twice");
  auto no_handler = prompt("c");
  no_handler.handler = nullptr;
  CHECK(r.add(std::move(no_handler)).error().message == "prompt 'c': no handler");
  CHECK(r.size() == 1);
  CHECK_FALSE(r.empty());
}

TEST_CASE("prompt registry: prompts page by cursor with their arguments; a bad cursor fails") {
  PromptRegistry r;
  auto first = prompt("code_review");
  first.title = "Code review";
  first.description = "Reviews code";
  first.arguments = {{"code", "Code", "the code", true, {}}, {"style", {}, {}, false, {}}};
  REQUIRE(r.add(std::move(first)).ok());
  for (const char* n : {"b", "c", "d"}) REQUIRE(r.add(prompt(n)).ok());
  auto page = r.list(std::nullopt, 3);
  REQUIRE(page.ok());
  CHECK(page->items_json.starts_with(
      R"([{"name":"code_review","title":"Code review","description":"Reviews code","arguments":[{"name":"code","title":"Code","description":"the code","required":true},{"name":"style","required":false}]},{"name":"b"},)"));
  std::vector<std::string> all = names(page->items_json);
  REQUIRE(page->next_cursor);
  auto rest = r.list(*page->next_cursor, 3);
  REQUIRE(rest.ok());
  for (auto& n : names(rest->items_json)) all.push_back(n);
  CHECK_FALSE(rest->next_cursor);
  CHECK(all == std::vector<std::string>{"code_review", "b", "c", "d"});
  for (const char* bad : {"", "zz", "0", "6e6f6e65"}) {
    CAPTURE(bad);
    auto failed = r.list(std::string_view(bad), 2);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().message == "invalid cursor");
  }
}

TEST_CASE("prompt registry: get checks the arguments before the handler sees them") {
  PromptRegistry r;
  auto p = prompt("args");
  p.arguments = {{"city", {}, {}, true, {}}, {"state", {}, {}, false, {}}};
  REQUIRE(r.add(std::move(p)).ok());
  testing::MapToolStorage storage;

  CHECK(*r.get("args", R"({"city":"Paris"})", storage) ==
        R"({"messages":[{"role":"user","content":{"type":"text","text":"args: city=Paris"}}]})");
  // Undeclared arguments are passed on.
  CHECK(*r.get("args", R"({"city":"Oslo","state":"x","extra":"y"})", storage) ==
        R"({"messages":[{"role":"user","content":{"type":"text","text":"args: city=Oslo extra=y state=x"}}]})");

  auto unknown = r.get("nope", "{}", storage);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::invalid_argument);
  CHECK(unknown.error().message == "unknown prompt: nope");
  for (const char* missing : {"", "{}", R"({"state":"x"})"}) {
    CAPTURE(missing);
    auto failed = r.get("args", missing, storage);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().code == ErrorCode::invalid_argument);
    CHECK(failed.error().message == "prompt 'args': missing required argument 'city'");
  }
  auto number = r.get("args", R"({"city":7})", storage);
  REQUIRE_FALSE(number.ok());
  CHECK(number.error().message == "prompt 'args': argument 'city' must be a string");
  CHECK(r.get("args", R"({"city":"x","state":null})", storage).error().message ==
        "prompt 'args': argument 'state' must be a string");
  CHECK(r.get("args", "[1]", storage).error().message ==
        "prompt 'args': arguments must be a JSON object");
  CHECK(r.get("args", "{", storage).error().message ==
        "prompt 'args': arguments must be a JSON object");
}

TEST_CASE("prompt registry: handlers build messages of every content kind and use storage") {
  PromptRegistry r;
  testing::MapToolStorage storage;
  storage.data["note"] = "remember";
  auto rich = prompt("rich");
  rich.handler = [](const PromptGet& get) -> Result<std::string> {
    auto note = get.storage.get("note");
    if (!note || !*note) return Error{ErrorCode::internal, "no note"};
    return prompt_result(
        {PromptMessage::user(Content::text(**note)),
         PromptMessage::assistant(Content::image("iVBORw==", "image/png")),
         PromptMessage::user(Content::audio("UklGRg==", "audio/wav")),
         PromptMessage::user(Content::embedded(ResourceContents::text("test://r", "R")))},
        "A rich prompt");
  };
  REQUIRE(r.add(std::move(rich)).ok());
  CHECK(*r.get("rich", "", storage) ==
        R"({"description":"A rich prompt","messages":[)"
        R"({"role":"user","content":{"type":"text","text":"remember"}},)"
        R"({"role":"assistant","content":{"type":"image","data":"iVBORw==","mimeType":"image/png"}},)"
        R"({"role":"user","content":{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}},)"
        R"({"role":"user","content":{"type":"resource","resource":{"uri":"test://r","text":"R"}}}]})");

  auto failing = prompt("failing");
  failing.handler = [](const PromptGet&) -> Result<std::string> {
    return Error{ErrorCode::invalid_argument, "city unknown"};
  };
  REQUIRE(r.add(std::move(failing)).ok());
  CHECK(r.get("failing", "", storage).error().message == "city unknown");
  auto throwing = prompt("throwing");
  throwing.handler = [](const PromptGet&) -> Result<std::string> {
    throw std::runtime_error("boom");
  };
  REQUIRE(r.add(std::move(throwing)).ok());
  auto threw = r.get("throwing", "", storage);
  REQUIRE_FALSE(threw.ok());
  CHECK(threw.error().code == ErrorCode::internal);
  CHECK(threw.error().message == "the handler of prompt 'throwing' threw: boom");
  auto malformed = prompt("malformed");
  malformed.handler = [](const PromptGet&) -> Result<std::string> { return std::string("[]"); };
  REQUIRE(r.add(std::move(malformed)).ok());
  CHECK(r.get("malformed", "", storage).error().code == ErrorCode::internal);
}

TEST_CASE("prompt registry: completion finds the prompt and the argument") {
  PromptRegistry r;
  auto p = prompt("weather");
  p.arguments = {{"city", {}, {}, true,
                  [](std::string_view value, const CompletionArguments& context) {
                    std::vector<std::string> out;
                    for (std::string c : {"Paris", "Perth", "Oslo"}) {
                      if (c.starts_with(value)) out.push_back(c);
                    }
                    if (context.contains("country")) out.push_back(context.at("country"));
                    return out;
                  }},
                 {"units", {}, {}, false, {}}};
  REQUIRE(r.add(std::move(p)).ok());
  CHECK(*r.complete("weather", "city", "P", {}) == std::vector<std::string>{"Paris", "Perth"});
  CHECK(*r.complete("weather", "city", "O", {{"country", "NO"}}) ==
        std::vector<std::string>{"Oslo", "NO"});
  CHECK(r.complete("weather", "units", "c", {})->empty());
  CHECK(r.complete("weather", "nope", "", {}).error().message ==
        "prompt 'weather': no argument 'nope'");
  CHECK(r.complete("other", "city", "", {}).error().message == "unknown prompt: other");
}
