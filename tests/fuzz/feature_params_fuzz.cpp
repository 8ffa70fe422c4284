// libFuzzer target: the server-feature methods never crash on any params text, and every
// answer is a result that parses as a JSON object or an error with a JSON-RPC code and a
// message. The input is the params of every method in turn (tools/list, resources/list,
// resources/templates/list, resources/read, prompts/list, prompts/get,
// completion/complete), against small registries with one of each kind of entry.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "dorm/mcp/feature_methods.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

class NoStorage : public ToolStorage {
 public:
  Result<std::optional<std::string>> get(std::string_view) override {
    return std::optional<std::string>{};
  }
  Result<void> put(std::string_view, std::string_view) override { return {}; }
  Result<bool> del(std::string_view) override { return false; }
};

struct Registries {
  ToolRegistry tools;
  ResourceRegistry resources;
  PromptRegistry prompts;

  Registries() {
    ToolSpec tool{"t", {}, "d", R"({"type":"object"})", {}, {}, false, Exposure::both,
                  [](std::shared_ptr<ToolContext>) {}};
    require(tools.add(std::move(tool)).ok());
    auto reader = [](const ResourceRead& read) -> Result<std::vector<ResourceContents>> {
      return std::vector<ResourceContents>{ResourceContents::text("", std::string(read.uri))};
    };
    require(resources.add(ResourceSpec{"test://a", "a", {}, {}, {}, {}, {}, reader}).ok());
    ResourceTemplateSpec t{"test://t/{id}", "t", {}, {}, {}, {}, reader, {}};
    t.completions["id"] = [](std::string_view value, const CompletionArguments& context) {
      return std::vector<std::string>(context.size() + 1, std::string(value));
    };
    require(resources.add_template(std::move(t)).ok());
    PromptSpec p{"p", {}, {}, {{"who", {}, {}, true, {}}}, [](const PromptGet& get) {
                   return Result<std::string>(prompt_result(
                       {PromptMessage::user(Content::text(get.arguments.at("who")))}));
                 }};
    require(prompts.add(std::move(p)).ok());
  }
};

void check(const MethodResult& answer) {
  if (const auto* error = std::get_if<MethodError>(&answer)) {
    require(error->code < 0 && !error->message.empty());
    return;
  }
  rapidjson::Document doc;
  const std::string& text = std::get<std::string>(answer);
  doc.Parse(text.data(), text.size());
  require(!doc.HasParseError() && doc.IsObject());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Registries r;
  NoStorage storage;
  std::string_view params(reinterpret_cast<const char*>(data), size);
  check(tools_list_result(&r.tools, params, 1));
  check(resources_list_result(&r.resources, params, 1));
  check(resources_templates_list_result(&r.resources, params, 1));
  check(resources_read_result(&r.resources, params, storage));
  check(prompts_list_result(&r.prompts, params, 1));
  check(prompts_get_result(&r.prompts, params, storage));
  check(completion_complete_result(&r.resources, &r.prompts, params));
  return 0;
}
