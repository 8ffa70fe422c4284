// The embedder's example in docs/mcp.md ("Resources, prompts and completion"), verbatim
// between the markers, compiled and exercised, so the documentation cannot rot.
#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include "dorm/mcp/feature_methods.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "map_tool_storage.hpp"

using namespace dorm;

namespace {
// ---- docs/mcp.md example begins ----

Result<void> add_notes(mcp::ResourceRegistry& resources, mcp::PromptRegistry& prompts) {
  // notes://<name>: the note the session stored under that name.
  mcp::ResourceTemplateSpec note;
  note.uri_template = "notes://{name}";
  note.name = "Note";
  note.mime_type = "text/plain";
  note.read = [](const mcp::ResourceRead& read) -> Result<std::vector<mcp::ResourceContents>> {
    auto text = read.storage.get("note/" + read.variables.at("name"));
    if (!text) return std::move(text).error();
    if (!*text) return Error{ErrorCode::not_found, "no such note"};  // answered -32002
    return std::vector{mcp::ResourceContents::text(std::string(read.uri), **text, "text/plain")};
  };
  if (auto ok = resources.add_template(std::move(note)); !ok) return ok;

  mcp::PromptSpec review;
  review.name = "review";
  review.description = "Asks the model to review a note.";
  mcp::PromptArgument which;
  which.name = "name";
  which.description = "which note";
  which.required = true;
  review.arguments = {which};
  review.handler = [](const mcp::PromptGet& get) -> Result<std::string> {
    return mcp::prompt_result({mcp::PromptMessage::user(mcp::Content::text(
        "Please review the note notes://" + get.arguments.at("name") + "."))});
  };
  return prompts.add(std::move(review));
}
// ---- docs/mcp.md example ends ----
}  // namespace

TEST_CASE("docs/mcp.md: the embedder's resource template and prompt work as described") {
  mcp::ResourceRegistry resources;
  mcp::PromptRegistry prompts;
  REQUIRE(add_notes(resources, prompts).ok());
  testing::MapToolStorage storage;
  REQUIRE(storage.put("note/todo", "buy milk").ok());
  auto read = resources.read("notes://todo", storage);
  REQUIRE(read.ok());
  rapidjson::Document doc;
  doc.Parse(read->c_str());
  CHECK(std::string(doc["contents"][0]["text"].GetString()) == "buy milk");
  auto missing = mcp::resources_read_result(&resources, R"({"uri":"notes://nope"})", storage);
  REQUIRE(std::holds_alternative<mcp::MethodError>(missing));
  CHECK(std::get<mcp::MethodError>(missing).code == mcp::kResourceNotFound);
  auto prompt = prompts.get("review", R"({"name":"todo"})", storage);
  REQUIRE(prompt.ok());
  CHECK(prompt->find("notes://todo") != std::string::npos);
  CHECK_FALSE(prompts.get("review", "{}", storage).ok());
}
