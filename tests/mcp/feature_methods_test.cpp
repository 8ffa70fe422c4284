// The server-feature methods: params checks, results, the JSON-RPC codes of errors
// (-32602, -32002 with the uri, -32603, -32601 for features not offered), to_response.
#include "dorm/mcp/feature_methods.hpp"

#include <doctest/doctest.h>

#include "map_tool_storage.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

struct Server {
  ToolRegistry tools;
  ResourceRegistry resources;
  PromptRegistry prompts;
  testing::MapToolStorage storage;

  Server() {
    for (const char* name : {"t1", "t2", "t3"}) {
      ToolSpec t;
      t.name = name;
      t.description = "d";
      t.handler = [](std::shared_ptr<ToolContext>) {};
      REQUIRE(tools.add(std::move(t)).ok());
    }
    for (const char* uri : {"test://a", "test://b", "test://c"}) {
      ResourceSpec r;
      r.uri = uri;
      r.name = "r";
      r.read = [](const ResourceRead& read) -> Result<std::vector<ResourceContents>> {
        if (read.uri == "test://c") return Error{ErrorCode::io_error, "disk gone"};
        return std::vector<ResourceContents>{ResourceContents::blob("", "AA==")};
      };
      REQUIRE(resources.add(std::move(r)).ok());
    }
    ResourceTemplateSpec t;
    t.uri_template = "test://t/{id}";
    t.name = "t";
    t.read = [](const ResourceRead& read) -> Result<std::vector<ResourceContents>> {
      if (read.variables.at("id") == "bad") return Error{ErrorCode::invalid_argument, "bad id"};
      return std::vector<ResourceContents>{ResourceContents::text("", read.variables.at("id"))};
    };
    REQUIRE(resources.add_template(std::move(t)).ok());
    PromptSpec p;
    p.name = "p";
    p.arguments = {{"who", {}, {}, true, {}}};
    p.handler = [](const PromptGet& get) -> Result<std::string> {
      return prompt_result({PromptMessage::user(Content::text("hi " + get.arguments.at("who")))});
    };
    REQUIRE(prompts.add(std::move(p)).ok());
  }
};

std::string result(const MethodResult& r) {
  if (const auto* e = std::get_if<MethodError>(&r)) FAIL("error " << e->code << ": " << e->message);
  return std::get<std::string>(r);
}

MethodError error(const MethodResult& r) {
  REQUIRE(std::holds_alternative<MethodError>(r));
  return std::get<MethodError>(r);
}

}  // namespace

TEST_CASE("feature methods: the list methods page with nextCursor and check the cursor") {
  Server s;
  CHECK(result(tools_list_result(&s.tools, "", 2)) ==
        R"({"tools":[{"name":"t1","description":"d","inputSchema":{"type":"object"}},)"
        R"({"name":"t2","description":"d","inputSchema":{"type":"object"}}],"nextCursor":"7433"})");
  CHECK(result(tools_list_result(&s.tools, R"({"cursor":"7433"})", 2)) ==
        R"({"tools":[{"name":"t3","description":"d","inputSchema":{"type":"object"}}]})");
  CHECK(result(tools_list_result(nullptr, "{}", 2)) == R"({"tools":[]})");
  auto first = result(resources_list_result(&s.resources, "{}", 2));
  CHECK(first == R"({"resources":[{"uri":"test://a","name":"r"},{"uri":"test://b","name":"r"}],)"
                 R"("nextCursor":"746573743a2f2f63"})");
  CHECK(result(resources_list_result(&s.resources, R"({"cursor":"746573743a2f2f63"})", 2)) ==
        R"({"resources":[{"uri":"test://c","name":"r"}]})");
  CHECK(result(resources_templates_list_result(&s.resources, "", 10)) ==
        R"({"resourceTemplates":[{"uriTemplate":"test://t/{id}","name":"t"}]})");
  CHECK(result(prompts_list_result(&s.prompts, "", 10)) ==
        R"({"prompts":[{"name":"p","arguments":[{"name":"who","required":true}]}]})");

  CHECK(error(resources_list_result(&s.resources, R"({"cursor":"zz"})", 2)) ==
        MethodError{kInvalidParams, "invalid cursor", {}});
  CHECK(error(prompts_list_result(&s.prompts, R"({"cursor":5})", 2)) ==
        MethodError{kInvalidParams, "params.cursor must be a string", {}});
  CHECK(error(tools_list_result(&s.tools, "[]", 2)) ==
        MethodError{kInvalidParams, "params must be an object", {}});
}

TEST_CASE("feature methods: resources/read answers -32002 with the uri, handler errors by kind") {
  Server s;
  CHECK(result(resources_read_result(&s.resources, R"({"uri":"test://a"})", s.storage)) ==
        R"({"contents":[{"uri":"test://a","blob":"AA=="}]})");
  CHECK(result(resources_read_result(&s.resources, R"({"uri":"test://t/7"})", s.storage)) ==
        R"({"contents":[{"uri":"test://t/7","text":"7"}]})");
  CHECK(error(resources_read_result(&s.resources, R"({"uri":"test://nope"})", s.storage)) ==
        MethodError{kResourceNotFound, "unknown resource: test://nope", R"({"uri":"test://nope"})"});
  CHECK(error(resources_read_result(&s.resources, R"({"uri":"test://t/bad"})", s.storage)) ==
        MethodError{kInvalidParams, "bad id", {}});
  CHECK(error(resources_read_result(&s.resources, R"({"uri":"test://c"})", s.storage)) ==
        MethodError{kInternalError, "disk gone", {}});
  for (const char* bad : {"", "{}", R"({"uri":1})"}) {
    CAPTURE(bad);
    CHECK(error(resources_read_result(&s.resources, bad, s.storage)) ==
          MethodError{kInvalidParams, "resources/read needs params.uri (a string)", {}});
  }
}

TEST_CASE("feature methods: prompts/get checks name and arguments, -32602 for the caller's mistakes") {
  Server s;
  CHECK(result(prompts_get_result(&s.prompts, R"({"name":"p","arguments":{"who":"you"}})", s.storage)) ==
        R"({"messages":[{"role":"user","content":{"type":"text","text":"hi you"}}]})");
  CHECK(error(prompts_get_result(&s.prompts, R"({"name":"q"})", s.storage)) ==
        MethodError{kInvalidParams, "unknown prompt: q", {}});
  CHECK(error(prompts_get_result(&s.prompts, R"({"name":"p"})", s.storage)) ==
        MethodError{kInvalidParams, "prompt 'p': missing required argument 'who'", {}});
  CHECK(error(prompts_get_result(&s.prompts, R"({"name":"p","arguments":{"who":1}})", s.storage)) ==
        MethodError{kInvalidParams, "prompt 'p': argument 'who' must be a string", {}});
  CHECK(error(prompts_get_result(&s.prompts, R"({"name":"p","arguments":"who"})", s.storage)) ==
        MethodError{kInvalidParams, "params.arguments must be an object", {}});
  CHECK(error(prompts_get_result(&s.prompts, R"({"arguments":{}})", s.storage)) ==
        MethodError{kInvalidParams, "prompts/get needs params.name (a string)", {}});
}

TEST_CASE("feature methods: features without a registry are not offered (-32601)") {
  Server s;
  ResourceRegistry no_resources;
  PromptRegistry no_prompts;
  testing::MapToolStorage storage;
  CHECK(error(resources_list_result(nullptr, "", 10)).code == kMethodNotFound);
  CHECK(error(resources_list_result(&no_resources, "", 10)).code == kMethodNotFound);
  CHECK(error(resources_templates_list_result(&no_resources, "", 10)).code == kMethodNotFound);
  CHECK(error(resources_read_result(nullptr, R"({"uri":"x:y"})", storage)).code == kMethodNotFound);
  CHECK(error(prompts_list_result(&no_prompts, "", 10)).message == "Method not found: prompts/list");
  CHECK(error(prompts_get_result(nullptr, R"({"name":"p"})", storage)).code == kMethodNotFound);
  CHECK(error(completion_complete_result(&no_resources, nullptr, "{}")).code == kMethodNotFound);
  // With prompts only, a resource ref is an unknown template, not an unknown method.
  auto only_prompts = completion_complete_result(
      nullptr, &s.prompts,
      R"({"ref":{"type":"ref/resource","uri":"test://t/{id}"},"argument":{"name":"id","value":""}})");
  CHECK(error(only_prompts) == MethodError{kInvalidParams, "unknown resource template: test://t/{id}", {}});
  CHECK(result(completion_complete_result(
            &s.resources, &s.prompts,
            R"({"ref":{"type":"ref/resource","uri":"test://t/{id}"},"argument":{"name":"id","value":""}})")) ==
        R"({"completion":{"values":[],"total":0,"hasMore":false}})");
  CHECK(error(completion_complete_result(&s.resources, &s.prompts, "")) ==
        MethodError{kInvalidParams, "completion/complete: params.ref must be an object", {}});
}

TEST_CASE("feature methods: to_response wraps a result or an error for the request") {
  CHECK(to_response(RequestId(std::int64_t{7}), MethodResult(std::string(R"({"a":1})"))) ==
        R"({"jsonrpc":"2.0","id":7,"result":{"a":1}})");
  CHECK(to_response(RequestId(std::string("x")),
                    MethodResult(MethodError{kResourceNotFound, "unknown resource: u:v", R"({"uri":"u:v"})"})) ==
        R"({"jsonrpc":"2.0","id":"x","error":{"code":-32002,"message":"unknown resource: u:v","data":{"uri":"u:v"}}})");
}
