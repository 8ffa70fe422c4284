// The fixtures of the official MCP conformance suite's server scenarios (`dorm serve
// --fixtures conformance`): the tools, resources, resource templates and prompts its 32
// scenarios call by name, with the contents they check. Registered through the public
// registry APIs only, as an embedder would.
#include "conformance_fixtures.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <memory>
#include <string>
#include <functional>
#include <vector>

#include "dorm/mcp/content.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"

namespace dorm::actors {
namespace {

using mcp::Content;
using mcp::ToolContext;
using mcp::ToolResult;
using mcp::ToolSpec;

// A 1×1 red PNG and a WAV of eight silent 8-bit samples: the smallest real files of
// their kinds, so a client that decodes them succeeds.
constexpr const char* kRedPixelPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
constexpr const char* kSilentWav =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

constexpr const char* kNoArguments = R"({"type":"object","properties":{}})";

ToolSpec fixed(const char* name, const char* description, std::vector<Content> content,
               bool is_error = false) {
  ToolSpec t;
  t.name = name;
  t.description = description;
  t.input_schema = kNoArguments;
  t.handler = [result = ToolResult::of(content, is_error)](std::shared_ptr<ToolContext> ctx) {
    ctx->finish(result);
  };
  return t;
}

// Three steps `step` apart; `each(i)` runs at step i (0, 1, 2), then the call finishes.
void in_steps(const std::shared_ptr<ToolContext>& ctx, int i, std::function<void(int)> each,
              std::string done) {
  each(i);
  if (i == 2) return ctx->finish(ToolResult::text(done));
  ctx->after(std::chrono::milliseconds(50), [ctx, i, each = std::move(each), done = std::move(done)] {
    in_steps(ctx, i + 1, each, done);
  });
}

ToolSpec with_logging() {
  ToolSpec t;
  t.name = "test_tool_with_logging";
  t.description = "Sends three info log notifications 50 ms apart, then finishes.";
  t.input_schema = kNoArguments;
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    static constexpr const char* kLines[] = {R"("Tool execution started")",
                                             R"("Tool processing data")",
                                             R"("Tool execution completed")"};
    in_steps(ctx, 0, [ctx](int i) { ctx->log("info", kLines[i]); }, "Logging test completed");
  };
  return t;
}

ToolSpec with_progress() {
  ToolSpec t;
  t.name = "test_tool_with_progress";
  t.description = "Reports progress 0, 50 and 100 of 100, 50 ms apart, then finishes.";
  t.input_schema = kNoArguments;
  t.handler = [](std::shared_ptr<ToolContext> ctx) {
    in_steps(ctx, 0, [ctx](int i) { ctx->progress(50.0 * i, 100.0); }, "Progress test completed");
  };
  return t;
}

// A tool that sends `method` with the params `make_params` builds from its arguments and
// finishes with `describe(reply)`; an error result when the client cannot be asked.
ToolSpec asking(const char* name, const char* description, const char* input_schema,
                const char* method, std::function<std::string(const rapidjson::Document&)> make_params,
                std::function<std::string(const rapidjson::Document&)> describe) {
  ToolSpec t;
  t.name = name;
  t.description = description;
  t.input_schema = input_schema;
  t.handler = [method, make_params, describe](std::shared_ptr<ToolContext> ctx) {
    rapidjson::Document args;
    args.Parse(ctx->arguments().c_str());
    auto sent = ctx->request(method, make_params(args), [ctx, describe](const mcp::ClientReply& reply) {
      if (reply.kind != mcp::ClientReply::Kind::result) return ctx->finish(ToolResult::error(reply.message));
      rapidjson::Document result;
      result.Parse(reply.json.c_str());
      ctx->finish(ToolResult::text(describe(result)));
    });
    if (!sent) ctx->finish(ToolResult::error(sent.error().message));
  };
  return t;
}

// A params object {"message": MESSAGE, "requestedSchema": SCHEMA} or a sampling request
// for PROMPT, built with RapidJSON so any argument text is escaped.
std::string elicitation_params(std::string_view message, const char* schema_json) {
  rapidjson::Document params(rapidjson::kObjectType);
  auto& a = params.GetAllocator();
  params.AddMember("message", rapidjson::Value(message.data(), static_cast<rapidjson::SizeType>(message.size()), a), a);
  rapidjson::Document schema(&a);
  schema.Parse(schema_json);
  params.AddMember("requestedSchema", rapidjson::Value(schema, a), a);
  return json_of(params);
}

std::string sampling_params(std::string_view prompt) {
  rapidjson::Document params(rapidjson::kObjectType);
  auto& a = params.GetAllocator();
  rapidjson::Value content(rapidjson::kObjectType);
  content.AddMember("type", "text", a);
  content.AddMember("text", rapidjson::Value(prompt.data(), static_cast<rapidjson::SizeType>(prompt.size()), a), a);
  rapidjson::Value message(rapidjson::kObjectType);
  message.AddMember("role", "user", a);
  message.AddMember("content", content, a);
  rapidjson::Value messages(rapidjson::kArrayType);
  messages.PushBack(message, a);
  params.AddMember("messages", messages, a);
  params.AddMember("maxTokens", 100, a);
  return json_of(params);
}

std::string string_member(const rapidjson::Value& v, const char* key) {
  return v.IsObject() && v.HasMember(key) && v[key].IsString() ? v[key].GetString() : "";
}

// "action=accept, content={...}"
std::string elicitation_outcome(const rapidjson::Document& result) {
  std::string content = result.IsObject() && result.HasMember("content") ? json_of(result["content"]) : "{}";
  return "action=" + string_member(result, "action") + ", content=" + content;
}

constexpr const char* kUserSchema =
    R"({"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]})";
constexpr const char* kDefaultsSchema =
    R"({"type":"object","properties":{"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},"score":{"type":"number","default":95.5},"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","default":true}}})";
constexpr const char* kEnumsSchema =
    R"({"type":"object","properties":{)"
    R"("untitledSingle":{"type":"string","enum":["option1","option2","option3"]},)"
    R"("titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},)"
    R"("legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},)"
    R"("untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},)"
    R"("titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}})"
    R"(}})";

std::vector<ToolSpec> tools() {
  std::vector<ToolSpec> out;
  out.push_back(fixed("test_simple_text", "Returns one text block.",
                      {Content::text("This is a simple text response for testing.")}));
  out.push_back(fixed("test_image_content", "Returns a 1x1 PNG image.",
                      {Content::image(kRedPixelPng, "image/png")}));
  out.push_back(fixed("test_audio_content", "Returns a short WAV clip.",
                      {Content::audio(kSilentWav, "audio/wav")}));
  out.push_back(fixed("test_embedded_resource", "Returns an embedded text resource.",
                      {Content::embedded(mcp::ResourceContents::text(
                          "test://embedded-resource", "This is an embedded resource content.", "text/plain"))}));
  out.push_back(fixed("test_multiple_content_types", "Returns text, an image and an embedded resource.",
                      {Content::text("Multiple content types test:"),
                       Content::image(kRedPixelPng, "image/png"),
                       Content::embedded(mcp::ResourceContents::text(
                           "test://mixed-content-resource", R"({"test":"data","value":123})",
                           "application/json"))}));
  out.push_back(fixed("test_error_handling", "Always fails.",
                      {Content::text("This tool intentionally returns an error for testing")}, true));
  out.push_back(with_logging());
  out.push_back(with_progress());
  out.push_back(asking(
      "test_sampling", "Asks the client's model to complete `prompt` (sampling/createMessage).",
      R"({"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]})",
      "sampling/createMessage",
      [](const rapidjson::Document& args) { return sampling_params(string_member(args, "prompt")); },
      [](const rapidjson::Document& result) {
        const rapidjson::Value* content = result.IsObject() && result.HasMember("content") ? &result["content"] : nullptr;
        return "LLM response: " + (content ? string_member(*content, "text") : std::string());
      }));
  out.push_back(asking(
      "test_elicitation", "Asks the user for a username and an email (elicitation/create).",
      R"({"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]})",
      "elicitation/create",
      [](const rapidjson::Document& args) { return elicitation_params(string_member(args, "message"), kUserSchema); },
      [](const rapidjson::Document& result) { return "User response: " + elicitation_outcome(result); }));
  out.push_back(asking(
      "test_elicitation_sep1034_defaults", "Asks the user with a form whose fields have defaults (SEP-1034).",
      kNoArguments, "elicitation/create",
      [](const rapidjson::Document&) { return elicitation_params("Please review and update the form fields with defaults", kDefaultsSchema); },
      [](const rapidjson::Document& result) { return "Elicitation completed: " + elicitation_outcome(result); }));
  out.push_back(asking(
      "test_elicitation_sep1330_enums", "Asks the user with every kind of enum field (SEP-1330).",
      kNoArguments, "elicitation/create",
      [](const rapidjson::Document&) { return elicitation_params("Please select options from the enum fields", kEnumsSchema); },
      [](const rapidjson::Document& result) { return "Elicitation completed: " + elicitation_outcome(result); }));
  ToolSpec schema2020;
  schema2020.name = "json_schema_2020_12_tool";
  schema2020.description = "Tool with JSON Schema 2020-12 features";
  schema2020.input_schema =
      R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false})";
  schema2020.handler = [](std::shared_ptr<ToolContext> ctx) {
    ctx->finish(ToolResult::text("received " + ctx->arguments()));
  };
  out.push_back(std::move(schema2020));
  return out;
}

// A fixed resource whose read returns `contents` as they are.
mcp::ResourceSpec fixed_resource(const char* uri, const char* name, const char* description,
                                 mcp::ResourceContents contents) {
  mcp::ResourceSpec r;
  r.uri = uri;
  r.name = name;
  r.description = description;
  r.mime_type = contents.mime_type;
  r.read = [contents](const mcp::ResourceRead&) -> Result<std::vector<mcp::ResourceContents>> {
    return std::vector<mcp::ResourceContents>{contents};
  };
  return r;
}

mcp::PromptSpec fixed_prompt(const char* name, const char* description,
                             std::vector<mcp::PromptMessage> messages) {
  mcp::PromptSpec p;
  p.name = name;
  p.description = description;
  p.handler = [result = mcp::prompt_result(messages)](const mcp::PromptGet&) -> Result<std::string> {
    return result;
  };
  return p;
}

mcp::PromptArgument required(const char* name, const char* description) {
  mcp::PromptArgument a;
  a.name = name;
  a.description = description;
  a.required = true;
  return a;
}

// Completes an argument from a few fixed words that start with what was typed.
std::vector<std::string> words_starting_with(std::string_view typed, const mcp::CompletionArguments&) {
  std::vector<std::string> out;
  for (const char* word : {"paris", "park", "party", "test", "testing", "tested"}) {
    if (std::string_view(word).starts_with(typed)) out.emplace_back(word);
  }
  return out;
}

}  // namespace

std::string json_of(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  value.Accept(w);
  return buffer.GetString();
}

Result<void> register_conformance_resources(mcp::ResourceRegistry& registry) {
  for (auto spec : {
           fixed_resource("test://static-text", "Static text", "A text resource that never changes.",
                          mcp::ResourceContents::text("test://static-text",
                                                      "This is the content of the static text resource.",
                                                      "text/plain")),
           fixed_resource("test://static-binary", "Static binary", "A 1x1 PNG image.",
                          mcp::ResourceContents::blob("test://static-binary", kRedPixelPng, "image/png")),
           fixed_resource("test://watched-resource", "Watched resource",
                          "A resource clients subscribe to for updates.",
                          mcp::ResourceContents::text("test://watched-resource", "Watched resource content.",
                                                      "text/plain")),
       }) {
    if (auto ok = registry.add(std::move(spec)); !ok) return ok;
  }
  mcp::ResourceTemplateSpec t;
  t.uri_template = "test://template/{id}/data";
  t.name = "Template data";
  t.description = "JSON data for the id in the URI.";
  t.mime_type = "application/json";
  t.read = [](const mcp::ResourceRead& read) -> Result<std::vector<mcp::ResourceContents>> {
    const std::string& id = read.variables.at("id");
    rapidjson::Document data(rapidjson::kObjectType);
    auto& a = data.GetAllocator();
    data.AddMember("id", rapidjson::Value(id.c_str(), a), a);
    data.AddMember("templateTest", true, a);
    data.AddMember("data", rapidjson::Value(("Data for ID: " + id).c_str(), a), a);
    return std::vector<mcp::ResourceContents>{
        mcp::ResourceContents::text(std::string(read.uri), json_of(data), "application/json")};
  };
  t.completions.emplace("id", words_starting_with);
  return registry.add_template(std::move(t));
}

Result<void> register_conformance_prompts(mcp::PromptRegistry& registry) {
  using mcp::PromptMessage;
  if (auto ok = registry.add(fixed_prompt("test_simple_prompt", "A prompt without arguments.",
                                          {PromptMessage::user(Content::text("This is a simple prompt for testing."))}));
      !ok) {
    return ok;
  }
  if (auto ok = registry.add(fixed_prompt("test_prompt_with_image", "A prompt with an image.",
                                          {PromptMessage::user(Content::image(kRedPixelPng, "image/png")),
                                           PromptMessage::user(Content::text("Please analyze the image above."))}));
      !ok) {
    return ok;
  }
  mcp::PromptSpec with_arguments;
  with_arguments.name = "test_prompt_with_arguments";
  with_arguments.description = "A prompt with two required arguments.";
  with_arguments.arguments = {required("arg1", "First test argument"), required("arg2", "Second test argument")};
  with_arguments.arguments[0].complete = words_starting_with;
  with_arguments.handler = [](const mcp::PromptGet& get) -> Result<std::string> {
    return mcp::prompt_result({PromptMessage::user(Content::text(
        "Prompt with arguments: arg1='" + get.arguments.at("arg1") + "', arg2='" + get.arguments.at("arg2") + "'"))});
  };
  if (auto ok = registry.add(std::move(with_arguments)); !ok) return ok;
  mcp::PromptSpec embedded;
  embedded.name = "test_prompt_with_embedded_resource";
  embedded.description = "A prompt that embeds the resource it is given.";
  embedded.arguments = {required("resourceUri", "URI of the resource to embed")};
  embedded.handler = [](const mcp::PromptGet& get) -> Result<std::string> {
    return mcp::prompt_result(
        {PromptMessage::user(Content::embedded(mcp::ResourceContents::text(
             get.arguments.at("resourceUri"), "Embedded resource content for testing.", "text/plain"))),
         PromptMessage::user(Content::text("Please process the embedded resource above."))});
  };
  return registry.add(std::move(embedded));
}

Result<void> register_conformance_tools(mcp::ToolRegistry& registry) {
  for (auto& spec : tools()) {
    if (auto ok = registry.add(std::move(spec)); !ok) return ok;
  }
  return {};
}

}  // namespace dorm::actors
