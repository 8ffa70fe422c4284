// completion/complete: prompt and template refs, context arguments, the cap of 100 with
// total and hasMore, and the params it refuses.
#include "dorm/mcp/completion.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

struct Registries {
  ResourceRegistry resources;
  PromptRegistry prompts;

  Registries() {
    PromptSpec p;
    p.name = "greet";
    p.handler = [](const PromptGet&) -> Result<std::string> { return prompt_result({}); };
    p.arguments = {
        {"name", {}, {}, true,
         [](std::string_view value, const CompletionArguments& context) {
           std::vector<std::string> out;
           for (std::string n : {"alice", "albert", "bob"}) {
             if (n.starts_with(value)) out.push_back(n);
           }
           if (auto lang = context.find("lang"); lang != context.end()) {
             for (auto& n : out) n += "@" + lang->second;
           }
           return out;
         }},
        {"lang", {}, {}, false, {}},
        {"many", {}, {}, false,
         [](std::string_view, const CompletionArguments&) {
           std::vector<std::string> out;
           for (int i = 0; i < 250; ++i) out.push_back("v" + std::to_string(i));
           return out;
         }},
    };
    REQUIRE(prompts.add(std::move(p)).ok());
    ResourceTemplateSpec t;
    t.uri_template = "test://items/{id}";
    t.name = "items";
    t.read = [](const ResourceRead&) -> Result<std::vector<ResourceContents>> {
      return std::vector<ResourceContents>{};
    };
    t.completions["id"] = [](std::string_view value, const CompletionArguments&) {
      return std::vector<std::string>{std::string(value) + "1", std::string(value) + "2"};
    };
    REQUIRE(resources.add_template(std::move(t)).ok());
  }

  Result<std::string> ask(std::string_view params) const {
    return complete(&resources, &prompts, params);
  }
};

}  // namespace

TEST_CASE("completion: prompt arguments and template variables, with context") {
  Registries r;
  CHECK(*r.ask(R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}})") ==
        R"({"completion":{"values":["alice","albert"],"total":2,"hasMore":false}})");
  CHECK(*r.ask(R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"b"},)"
               R"("context":{"arguments":{"lang":"fr"}}})") ==
        R"({"completion":{"values":["bob@fr"],"total":1,"hasMore":false}})");
  CHECK(*r.ask(R"({"ref":{"type":"ref/resource","uri":"test://items/{id}"},"argument":{"name":"id","value":"x"}})") ==
        R"({"completion":{"values":["x1","x2"],"total":2,"hasMore":false}})");
  // No completer: no values.
  CHECK(*r.ask(R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"lang","value":""}})") ==
        R"({"completion":{"values":[],"total":0,"hasMore":false}})");
}

TEST_CASE("completion: at most 100 values, with the total and hasMore") {
  Registries r;
  auto many = r.ask(R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"many","value":""}})");
  REQUIRE(many.ok());
  CHECK(many->find(R"("v99")") != std::string::npos);
  CHECK(many->find(R"("v100")") == std::string::npos);
  CHECK(many->ends_with(R"(],"total":250,"hasMore":true}})"));
  rapidjson::Document doc;
  doc.Parse(many->c_str());
  REQUIRE(doc["completion"]["values"].IsArray());
  std::size_t values = doc["completion"]["values"].Size();
  CHECK(values == kMaxCompletionValues);
}

TEST_CASE("completion: unknown refs and arguments and malformed params are invalid_argument") {
  Registries r;
  struct Case {
    const char* params;
    const char* message;
  };
  for (auto c : {
           Case{R"({"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"name","value":""}})",
                "unknown prompt: nope"},
           Case{R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"nope","value":""}})",
                "prompt 'greet': no argument 'nope'"},
           Case{R"({"ref":{"type":"ref/resource","uri":"test://other/{x}"},"argument":{"name":"x","value":""}})",
                "unknown resource template: test://other/{x}"},
           Case{R"({"ref":{"type":"ref/resource","uri":"test://items/{id}"},"argument":{"name":"x","value":""}})",
                "resource template 'test://items/{id}': no variable 'x'"},
           Case{"", "completion/complete: params must be an object"},
           Case{"[]", "completion/complete: params must be an object"},
           Case{R"({"argument":{"name":"x","value":""}})", "completion/complete: params.ref must be an object"},
           Case{R"({"ref":{"type":"ref/prompt","name":"greet"}})",
                "completion/complete: params.argument must be an object"},
           Case{R"({"ref":{"type":"ref/tool","name":"x"},"argument":{"name":"x","value":""}})",
                "completion/complete: params.ref.type must be \"ref/prompt\" or \"ref/resource\""},
           Case{R"({"ref":{"name":"greet"},"argument":{"name":"x","value":""}})",
                "completion/complete: params.ref.type must be a string"},
           Case{R"({"ref":{"type":"ref/prompt"},"argument":{"name":"x","value":""}})",
                "completion/complete: params.ref.name must be a string"},
           Case{R"({"ref":{"type":"ref/resource"},"argument":{"name":"x","value":""}})",
                "completion/complete: params.ref.uri must be a string"},
           Case{R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name"}})",
                "completion/complete: params.argument.value must be a string"},
           Case{R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":""},"context":[]})",
                "completion/complete: params.context must be an object"},
           Case{R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":""},"context":{"arguments":{"lang":1}}})",
                "completion/complete: params.context.arguments.lang must be a string"},
       }) {
    CAPTURE(c.params);
    auto result = r.ask(c.params);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == ErrorCode::invalid_argument);
    CHECK(result.error().message == c.message);
  }
  // No registries: nothing to complete.
  CHECK(complete(nullptr, nullptr,
                 R"({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":""}})")
            .error()
            .message == "unknown prompt: greet");
}
