// The server features beyond tools, through the session on virtual time: capabilities
// that list exactly what is registered, resources (list, templates, read, subscribe),
// prompts, completion, and structured tool output held to its schema.
#include <doctest/doctest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/actors/resource_updates.hpp"
#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

// Sessions with the "testing" tools and the conformance suite's resources and prompts.
struct FeatureFixture : SessionFixture {
  mcp::ResourceRegistry resources;
  mcp::PromptRegistry prompts;
  mcp::ToolRegistry unused_tools;

  FeatureFixture() {
    // The namespace holds `options` by reference: sessions activated from now on see these.
    REQUIRE(actors::register_fixtures({unused_tools, resources, prompts}, "conformance").ok());
    options.resources = &resources;
    options.prompts = &prompts;
  }
  rapidjson::Document request(const std::string& s, std::string_view method, std::string_view params) {
    auto ev = events(post(s, R"({"jsonrpc":"2.0","id":1,"method":")" + std::string(method) +
                                 R"(","params":)" + std::string(params) + "}"));
    REQUIRE(ev.size() == 1);
    return std::move(ev[0]);
  }
  // The standalone stream's events (a GET without Last-Event-ID), then the GET is left open.
  std::vector<rapidjson::Document> standalone(const std::string& s) {
    SessionCall c;
    c.kind = SessionCall::Kind::get;
    c.session_id = s;
    c.caller = alice;
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(std::move(c), answer);
    runtime->run_until_idle();
    REQUIRE(answer->has_value());
    read(**answer);
    return events(**answer);
  }
  void crash_and_start() {
    runtime->crash();
    start();
    add_namespace();
  }
};

std::string initialize_result_capabilities(const HttpResponse& r) {
  auto ev = events(r);
  REQUIRE(ev.size() == 1);
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  ev[0]["result"]["capabilities"].Accept(w);
  return b.GetString();
}

}  // namespace

TEST_CASE("features: initialize announces exactly what is registered") {
  FeatureFixture f;
  CHECK(initialize_result_capabilities(f.initialize("s-caps-full-000001")) ==
        R"({"tools":{"listChanged":false},"resources":{"subscribe":true,"listChanged":false},)"
        R"("prompts":{"listChanged":false},"completions":{},"logging":{}})");
  f.options.resources = nullptr;
  f.options.prompts = nullptr;
  CHECK(initialize_result_capabilities(f.initialize("s-caps-tools-00001")) ==
        R"({"tools":{"listChanged":false},"logging":{}})");
  // Without resources, their methods are unknown.
  auto ev = f.request("s-caps-tools-00001", "resources/list", "{}");
  CHECK(ev["error"]["code"].GetInt() == -32601);
  ev = f.request("s-caps-tools-00001", "resources/subscribe", R"({"uri":"test://static-text"})");
  CHECK(ev["error"]["code"].GetInt() == -32601);
  f.expected_active = 2;
}

TEST_CASE("features: resources are listed, read (text, blob, template) and an unknown uri is -32002") {
  FeatureFixture f;
  const std::string s = "s-resources-00001";
  REQUIRE(f.initialize(s).status == 200);
  auto listed = f.request(s, "resources/list", "{}");
  std::vector<std::string> uris;
  for (const auto& r : listed["result"]["resources"].GetArray()) uris.push_back(r["uri"].GetString());
  // page_size is 2 in the fixture: the first page, then a cursor.
  CHECK(uris == std::vector<std::string>{"test://static-text", "test://static-binary"});
  REQUIRE(listed["result"].HasMember("nextCursor"));
  auto rest = f.request(s, "resources/list",
                        R"({"cursor":")" + std::string(listed["result"]["nextCursor"].GetString()) + R"("})");
  CHECK(std::string(rest["result"]["resources"][0]["uri"].GetString()) == "test://watched-resource");

  auto templates = f.request(s, "resources/templates/list", "{}");
  CHECK(std::string(templates["result"]["resourceTemplates"][0]["uriTemplate"].GetString()) ==
        "test://template/{id}/data");

  auto text = f.request(s, "resources/read", R"({"uri":"test://static-text"})");
  CHECK(std::string(text["result"]["contents"][0]["text"].GetString()) ==
        "This is the content of the static text resource.");
  auto blob = f.request(s, "resources/read", R"({"uri":"test://static-binary"})");
  CHECK(std::string(blob["result"]["contents"][0]["mimeType"].GetString()) == "image/png");
  CHECK(blob["result"]["contents"][0].HasMember("blob"));
  auto templated = f.request(s, "resources/read", R"({"uri":"test://template/123/data"})");
  CHECK(std::string(templated["result"]["contents"][0]["text"].GetString()) ==
        R"({"id":"123","templateTest":true,"data":"Data for ID: 123"})");

  auto unknown = f.request(s, "resources/read", R"({"uri":"test://nope"})");
  CHECK(unknown["error"]["code"].GetInt() == -32002);
  CHECK(std::string(unknown["error"]["data"]["uri"].GetString()) == "test://nope");
  auto bad = f.request(s, "resources/read", R"({"uri":7})");
  CHECK(bad["error"]["code"].GetInt() == -32602);
  f.expected_active = 1;
}

TEST_CASE("features: prompts are filled in; a missing required argument is -32602 naming it; completion") {
  FeatureFixture f;
  const std::string s = "s-prompts-0000001";
  REQUIRE(f.initialize(s).status == 200);
  auto got = f.request(s, "prompts/get", R"({"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}})");
  CHECK(std::string(got["result"]["messages"][0]["content"]["text"].GetString()) ==
        "Prompt with arguments: arg1='a', arg2='b'");
  auto missing = f.request(s, "prompts/get", R"({"name":"test_prompt_with_arguments","arguments":{"arg1":"a"}})");
  CHECK(missing["error"]["code"].GetInt() == -32602);
  CHECK(std::string(missing["error"]["message"].GetString()).find("'arg2'") != std::string::npos);
  auto unknown = f.request(s, "prompts/get", R"({"name":"nope"})");
  CHECK(unknown["error"]["code"].GetInt() == -32602);

  auto completed = f.request(s, "completion/complete",
                             R"({"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"par"}})");
  const auto& values = completed["result"]["completion"]["values"];
  REQUIRE(values.IsArray());
  std::vector<std::string> got_values;
  for (const auto& v : values.GetArray()) got_values.push_back(v.GetString());
  CHECK(got_values == std::vector<std::string>{"paris", "park", "party"});
  auto by_template = f.request(s, "completion/complete",
                               R"({"ref":{"type":"ref/resource","uri":"test://template/{id}/data"},"argument":{"name":"id","value":"tes"}})");
  CHECK(by_template["result"]["completion"]["values"].Size() == 3);
  f.expected_active = 1;
}

TEST_CASE("features: a subscription gets resources/updated, survives a crash, and ends with unsubscribe") {
  FeatureFixture f;
  const std::string s = "s-subscribe-00001";
  const std::string other = "s-subscribe-00002";
  REQUIRE(f.initialize(s).status == 200);
  REQUIRE(f.initialize(other).status == 200);
  auto unknown = f.request(s, "resources/subscribe", R"({"uri":"test://nope"})");
  CHECK(unknown["error"]["code"].GetInt() == -32002);
  auto ok = f.request(s, "resources/subscribe", R"({"uri":"test://watched-resource"})");
  CHECK(ok["result"].IsObject());
  CHECK(ok["result"].ObjectEmpty());

  auto told = actors::notify_resource_updated(*f.runtime, "test://watched-resource");
  REQUIRE(told.ok());
  CHECK(*told == 1);  // the other session did not subscribe
  CHECK(*actors::notify_resource_updated(*f.runtime, "test://static-text") == 0);
  f.runtime->run_until_idle();
  auto ev = f.standalone(s);
  REQUIRE(ev.size() == 1);
  CHECK(std::string(ev[0]["method"].GetString()) == "notifications/resources/updated");
  CHECK(std::string(ev[0]["params"]["uri"].GetString()) == "test://watched-resource");
  CHECK(f.standalone(other).empty());

  f.crash_and_start();
  REQUIRE(*actors::notify_resource_updated(*f.runtime, "test://watched-resource") == 1);
  f.runtime->run_until_idle();
  ev = f.standalone(s);
  REQUIRE(ev.size() == 1);  // the GET resumes after what the first one carried
  CHECK(std::string(ev[0]["method"].GetString()) == "notifications/resources/updated");

  CHECK(f.request(s, "resources/unsubscribe", R"({"uri":"test://watched-resource"})")["result"].IsObject());
  CHECK(*actors::notify_resource_updated(*f.runtime, "test://watched-resource") == 0);

  // DELETE takes a subscription's index entry with it.
  CHECK(f.request(other, "resources/subscribe", R"({"uri":"test://static-text"})")["result"].IsObject());
  CHECK(f.simple(SessionCall::Kind::remove, other).status == 200);
  CHECK(*actors::notify_resource_updated(*f.runtime, "test://static-text") == 0);
  f.expected_active = 1;
}

TEST_CASE("features: structured output that fits its schema is sent; one that does not is an error result") {
  FeatureFixture f;
  const std::string s = "s-structured-0001";
  REQUIRE(f.initialize(s).status == 200);
  auto fits = f.request(s, "tools/call", R"({"name":"add","arguments":{"a":2,"b":3}})");
  CHECK_FALSE(fits["result"]["isError"].GetBool());
  CHECK(fits["result"]["structuredContent"]["sum"].GetDouble() == 5);
  CHECK(std::string(fits["result"]["content"][0]["text"].GetString()) == R"({"sum":5.0})");
  auto broken = f.request(s, "tools/call", R"({"name":"add","arguments":{"a":2,"b":3,"broken":true}})");
  CHECK(broken["result"]["isError"].GetBool());
  CHECK_FALSE(broken["result"].HasMember("structuredContent"));
  CHECK(std::string(broken["result"]["content"][0]["text"].GetString()).find("add") != std::string::npos);
  f.expected_active = 1;
}
