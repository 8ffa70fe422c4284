// The parts of MCP 2026-07-28 that need no runtime: which era a request belongs to, the
// checks of a modern POST in the revision's order, header values, the result envelope,
// the stateless answers, requestState's format, and the Mcp-Param-* headers.
#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include <map>
#include <string>

#include "dorm/mcp/listen_hub.hpp"
#include "dorm/mcp/modern.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

constexpr const char* kMeta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})";

ParsedBody body_of(const std::string& text) {
  auto parsed = parse_body(text);
  REQUIRE(std::holds_alternative<ParsedBody>(parsed));
  return std::get<ParsedBody>(std::move(parsed));
}

std::string request(std::string_view method, std::string params = "{}") {
  return R"({"jsonrpc":"2.0","id":7,"method":")" + std::string(method) + R"(","params":)" + params + "}";
}

// The code of the rejection, after checking it has the id, is JSON-RPC and is 400.
int refused(const std::variant<ModernRequest, Rejection>& checked, int status = 400) {
  REQUIRE(std::holds_alternative<Rejection>(checked));
  const auto& r = std::get<Rejection>(checked);
  CHECK(r.http_status == status);
  rapidjson::Document doc;
  doc.Parse(r.body.c_str());
  REQUIRE(doc.IsObject());
  return doc["error"]["code"].GetInt();
}

ModernHeaders good(std::string_view method, std::optional<std::string_view> name = std::nullopt) {
  return ModernHeaders{"2026-07-28", method, name};
}

}  // namespace

TEST_CASE("modern: which era a request without a session belongs to") {
  auto discover = body_of(request("server/discover", std::string("{") + kMeta + "}"));
  CHECK(is_modern(std::string_view("2026-07-28"), &discover));
  CHECK(is_modern(std::string_view("v999"), nullptr));  // any revision that is not a legacy one
  CHECK_FALSE(is_modern(std::string_view("2025-11-25"), &discover));
  CHECK(is_modern(std::nullopt, &discover));  // no header: the body's _meta says so
  auto initialize = body_of(request("initialize", R"({"protocolVersion":"2025-11-25","capabilities":{}})"));
  CHECK_FALSE(is_modern(std::nullopt, &initialize));
  CHECK_FALSE(is_modern(std::nullopt, nullptr));
}

TEST_CASE("modern: a POST's checks answer in the revision's order") {
  // _meta first: missing, or without one of its two required members, is -32602 even with
  // a good header.
  CHECK(refused(check_modern(good("server/discover"), body_of(request("server/discover")))) == kInvalidParams);
  CHECK(refused(check_modern(good("server/discover"),
                             body_of(request("server/discover",
                                             R"({"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}})")))) ==
        kInvalidParams);
  CHECK(refused(check_modern(good("server/discover"),
                             body_of(request("server/discover",
                                             R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}})")))) ==
        kInvalidParams);
  // Then the header against _meta (-32020) before the revision itself (-32022).
  auto v999 = body_of(request("server/discover",
                              R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}})"));
  CHECK(refused(check_modern(good("server/discover"), v999)) == kHeaderMismatch);
  auto unsupported = check_modern(ModernHeaders{"v999", "server/discover", std::nullopt}, v999);
  CHECK(refused(unsupported) == kUnsupportedProtocolVersion);
  rapidjson::Document data;
  data.Parse(std::get<Rejection>(unsupported).body.c_str());
  CHECK(std::string(data["error"]["data"]["requested"].GetString()) == "v999");
  CHECK(std::string(data["error"]["data"]["supported"][0].GetString()) == "2026-07-28");
  CHECK(data["id"].GetInt() == 7);
  auto fine = body_of(request("tools/call", std::string(R"({"name":"echo",)") + kMeta + "}"));
  CHECK(refused(check_modern(ModernHeaders{std::nullopt, "tools/call", "echo"}, fine)) == kHeaderMismatch);
  // Then Mcp-Method and Mcp-Name.
  CHECK(refused(check_modern(ModernHeaders{"2026-07-28", std::nullopt, "echo"}, fine)) == kHeaderMismatch);
  CHECK(refused(check_modern(ModernHeaders{"2026-07-28", "TOOLS/CALL", "echo"}, fine)) == kHeaderMismatch);
  CHECK(refused(check_modern(good("tools/call"), fine)) == kHeaderMismatch);
  CHECK(refused(check_modern(good("tools/call", "ech0"), fine)) == kHeaderMismatch);
  // Spaces around a value do not count; the base64 form is decoded first.
  CHECK(std::holds_alternative<ModernRequest>(check_modern(good("tools/call", "  echo\t"), fine)));
  CHECK(std::holds_alternative<ModernRequest>(check_modern(good("tools/call", "=?base64?ZWNobw==?="), fine)));
  auto ok = check_modern(good("tools/call", "echo"), fine);
  REQUIRE(std::holds_alternative<ModernRequest>(ok));
  CHECK(std::get<ModernRequest>(ok).client_capabilities == "{}");
  CHECK(std::get<ModernRequest>(ok).log_level.empty());
  // A log level that is not one, a batch, a response.
  CHECK(refused(check_modern(good("tools/list"),
                             body_of(request("tools/list",
                                             R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}})")))) ==
        kInvalidParams);
  CHECK(refused(check_modern(good("tools/list"), body_of("[" + request("tools/list") + "]"))) == kInvalidRequest);
  CHECK(refused(check_modern(good("tools/list"), body_of(R"({"jsonrpc":"2.0","id":1,"result":{}})"))) == kInvalidRequest);
  // A notification is taken as it is.
  auto note = check_modern(good("notifications/cancelled"), body_of(R"({"jsonrpc":"2.0","method":"notifications/cancelled"})"));
  CHECK(std::holds_alternative<ModernRequest>(note));
}

TEST_CASE("modern: header values — trimmed, base64 decoded strictly, no control characters") {
  CHECK(decode_header_value(" a b ") == std::string("a b"));
  CHECK(decode_header_value("=?base64?SGVsbG8=?=") == std::string("Hello"));
  CHECK(decode_header_value("=?base64?w6k=?=") == std::string("\xc3\xa9"));
  CHECK_FALSE(decode_header_value("=?base64?SGVsbG8?=").has_value());   // padding missing
  CHECK_FALSE(decode_header_value("=?base64?SGVs*G8=?=").has_value());  // not base64
  CHECK_FALSE(decode_header_value("=?base64?/w==?=").has_value());      // not UTF-8
  CHECK_FALSE(decode_header_value("=?base64?AQ==?=").has_value());      // a control character
  CHECK_FALSE(decode_header_value("caf\xc3\xa9").has_value());          // raw non-ASCII
  CHECK(decode_header_value("=?base64?SGVsbG8=") == std::string("=?base64?SGVsbG8="));  // no suffix: literal
}

TEST_CASE("modern: the result envelope, discover and the stateless answers") {
  ModernServer server{"srv", "1.2", nullptr, nullptr, nullptr};
  rapidjson::Document r;
  r.Parse(modern_result(R"({"content":[],"_meta":{"keep":1}})", server, "complete", CacheHints{5, true}).c_str());
  CHECK(std::string(r["resultType"].GetString()) == "complete");
  CHECK(r["ttlMs"].GetInt64() == 5);
  CHECK(std::string(r["cacheScope"].GetString()) == "public");
  CHECK(r["_meta"]["keep"].GetInt() == 1);
  CHECK(std::string(r["_meta"][kMetaServerInfo]["version"].GetString()) == "1.2");
  CHECK(modern_result("[1]", server) == "[1]");

  auto answer = [&server](std::string_view method) {
    auto checked = check_modern(good(method), body_of(request(method, std::string("{") + kMeta + "}")));
    REQUIRE(std::holds_alternative<ModernRequest>(checked));
    return answer_stateless(std::get<ModernRequest>(checked), server);
  };
  auto discover = answer("server/discover");
  REQUIRE(discover);
  rapidjson::Document d;
  d.Parse(discover->body.c_str());
  CHECK(std::string(d["result"]["supportedVersions"][0].GetString()) == "2026-07-28");
  CHECK(d["result"]["capabilities"].HasMember("tools"));
  CHECK_FALSE(d["result"]["capabilities"].HasMember("prompts"));
  CHECK(d["result"].HasMember("ttlMs"));
  for (std::string_view gone : {"initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"}) {
    auto a = answer(gone);
    REQUIRE(a);
    CHECK(a->http_status == 404);
    CHECK(a->body.find("-32601") != std::string::npos);
  }
  CHECK_FALSE(answer("tools/call").has_value());
  auto listed = answer("tools/list");
  REQUIRE(listed);
  CHECK(listed->body.find(R"("cacheScope":"public")") != std::string::npos);
}

TEST_CASE("modern: requestState is sealed for its owner under the key; anything else does not open") {
  const std::string key(32, '\x42');
  const Identity alice{"alice", "acme"};
  RequestState s{"00112233445566778899aabbccddeeff", 3};
  auto text = seal_request_state(s, alice, key);
  CHECK(text.size() == 48);
  auto back = open_request_state(text, alice, key);
  REQUIRE(back);
  CHECK(back->handle == s.handle);
  CHECK(back->round == 3);
  // Another principal (the user/org boundary included), another key, any changed byte.
  CHECK_FALSE(open_request_state(text, Identity{"bob", "acme"}, key));
  CHECK_FALSE(open_request_state(text, Identity{"alic", "eacme"}, key));
  CHECK_FALSE(open_request_state(text, alice, std::string(32, '\x43')));
  for (std::size_t at = 0; at < text.size(); ++at) {
    std::string changed = text;
    changed[at] = changed[at] == 'A' ? 'B' : 'A';
    CHECK_FALSE(open_request_state(changed, alice, key));
  }
  RequestState later = s;
  later.round = 4;
  CHECK(seal_request_state(later, alice, key) != text);
  CHECK_FALSE(open_request_state(text + "-TAMPERED", alice, key));
  CHECK_FALSE(open_request_state(text.substr(0, 47) + "!", alice, key));
  CHECK_FALSE(open_request_state("", alice, key));
}

TEST_CASE("modern: Mcp-Param headers follow the arguments their schema marks") {
  ToolRegistry tools;
  ToolSpec t;
  t.name = "route";
  t.input_schema =
      R"({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}})";
  t.handler = [](std::shared_ptr<ToolContext>) {};
  REQUIRE(tools.add(std::move(t)).ok());
  auto check = [&tools](std::string args, std::map<std::string, std::string> headers) {
    auto checked = check_modern(good("tools/call", "route"),
                                body_of(request("tools/call", R"({"name":"route","arguments":)" + args + "," + kMeta + "}")));
    REQUIRE(std::holds_alternative<ModernRequest>(checked));
    return check_param_headers(std::get<ModernRequest>(checked), &tools,
                               [&headers](std::string_view name) -> std::optional<std::string_view> {
                                 auto it = headers.find(std::string(name));
                                 if (it == headers.end()) return std::nullopt;
                                 return it->second;
                               });
  };
  CHECK_FALSE(check(R"({"region":"eu","n":5})", {{"mcp-param-region", "eu"}, {"mcp-param-n", "05"}}).has_value());
  CHECK_FALSE(check(R"({"region":"eu"})", {{"mcp-param-region", "=?base64?ZXU=?="}}).has_value());
  CHECK_FALSE(check(R"({"region":null})", {}).has_value());  // absent or null: no header expected
  CHECK(check(R"({"region":"eu"})", {}).has_value());
  CHECK(check(R"({"region":"eu"})", {{"mcp-param-region", "us"}}).has_value());
  CHECK(check(R"({"region":"eu"})", {{"mcp-param-region", "=?base64?ZXU?="}}).has_value());
  CHECK(check(R"({"n":5})", {{"mcp-param-n", "5x"}})->http_status == 400);
}

TEST_CASE("modern: what a tool may ask a client, by what it declared") {
  CHECK_FALSE(refuse_client_request("elicitation/create", "{}", R"({"elicitation":{}})", "here").has_value());
  CHECK(refuse_client_request("elicitation/create", "{}", "{}", "here")->capability == "elicitation");
  CHECK(refuse_client_request("elicitation/create", R"({"mode":"url"})", R"({"elicitation":{}})", "here").has_value());
  CHECK_FALSE(refuse_client_request("elicitation/create", R"({"mode":"url"})", R"({"elicitation":{"url":{}}})", "here"));
  CHECK(refuse_client_request("roots/list", "{}", R"({"sampling":{}})", "here")->capability == "roots");
  CHECK(refuse_client_request("tools/call", "{}", kMeta, "here")->capability.empty());
  CHECK_FALSE(refuse_client_request("ping", "{}", "{}", "here").has_value());
}

TEST_CASE("modern: subscriptions hear what they asked for, tagged with their request id") {
  ListenHub hub;
  auto tools_only = std::make_shared<StreamBody>();
  auto everything = std::make_shared<StreamBody>();
  ListenFilter f1;
  f1.tools_list_changed = true;
  ListenFilter f2;
  f2.tools_list_changed = f2.prompts_list_changed = true;
  f2.resource_uris = {"test://a"};
  hub.add(tools_only, RequestId(7), f1);
  hub.add(everything, RequestId(std::string("s-1")), f2);
  auto drain = [](StreamBody& body) {
    auto pending = body.take();
    body.sent(pending.bytes.size());
    return pending.bytes;
  };
  auto first = drain(*tools_only);
  CHECK(first.find(R"("method":"notifications/subscriptions/acknowledged")") != std::string::npos);
  CHECK(first.find(R"("notifications":{"toolsListChanged":true})") != std::string::npos);
  CHECK(first.find(R"("io.modelcontextprotocol/subscriptionId":7)") != std::string::npos);
  CHECK(drain(*everything).find(R"("io.modelcontextprotocol/subscriptionId":"s-1")") != std::string::npos);

  hub.list_changed(ListenHub::List::prompts);
  CHECK(drain(*tools_only).empty());
  CHECK(drain(*everything).find("notifications/prompts/list_changed") != std::string::npos);
  hub.resource_updated("test://a");
  hub.resource_updated("test://b");
  auto updates = drain(*everything);
  CHECK(updates.find(R"("uri":"test://a")") != std::string::npos);
  CHECK(updates.find("test://b") == std::string::npos);
  hub.list_changed(ListenHub::List::tools);
  CHECK(drain(*tools_only).find("notifications/tools/list_changed") != std::string::npos);

  // A closed connection is forgotten at the next publish; the rest end with their result.
  tools_only->close();
  hub.list_changed(ListenHub::List::tools);
  CHECK(hub.size() == 1);
  drain(*everything);
  hub.end_all();
  auto last = everything->take();
  CHECK(last.end);
  CHECK(last.bytes.find(R"("id":"s-1","result":{"resultType":"complete")") != std::string::npos);
  CHECK(hub.size() == 0);
  CHECK(ListenHub::list_of("notifications/tools/list_changed") == ListenHub::List::tools);
  CHECK_FALSE(ListenHub::list_of("notifications/message").has_value());
}

TEST_CASE("modern: a task's status reaches the subscriptions of its owner that asked for it") {
  ListenHub hub;
  auto drain = [](StreamBody& body) {
    auto pending = body.take();
    body.sent(pending.bytes.size());
    return pending.bytes;
  };
  auto listener = [&](std::set<std::string> ids, Identity who, std::int64_t id) {
    auto body = std::make_shared<StreamBody>();
    ListenFilter f;
    f.task_ids = std::move(ids);
    f.owner = std::move(who);
    hub.add(body, RequestId(id), f);
    drain(*body);
    return body;
  };
  const Identity alice{"alice", "acme"};
  auto mine = listener({"t1"}, alice, 1);
  auto other_task = listener({"t2"}, alice, 2);
  auto thief = listener({"t1"}, Identity{"mallory", "acme"}, 3);
  hub.task_status("t1", alice, R"({"taskId":"t1","status":"completed"})");
  auto heard = drain(*mine);
  CHECK(heard.find(R"("method":"notifications/tasks")") != std::string::npos);
  CHECK(heard.find(R"("status":"completed")") != std::string::npos);
  CHECK(heard.find(R"("io.modelcontextprotocol/subscriptionId":1)") != std::string::npos);
  CHECK(drain(*other_task).empty());
  CHECK(drain(*thief).empty());
}

TEST_CASE("modern: the listen filter keeps what the server can announce") {
  ResourceRegistry resources;
  ResourceSpec r;
  r.uri = "test://a";
  r.name = "a";
  r.read = [](const ResourceRead&) -> Result<std::vector<ResourceContents>> { return std::vector<ResourceContents>{}; };
  REQUIRE(resources.add(std::move(r)).ok());
  ListenHub hub;
  ModernServer server{"srv", "1", nullptr, &resources, nullptr, 100, &hub};
  auto filter_of = [&server](std::string notifications, std::string caps = "{}") {
    auto checked = check_modern(
        good("subscriptions/listen"),
        body_of(request("subscriptions/listen", R"({"notifications":)" + notifications +
                                                    R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":)" +
                                                    caps + "}}")));
    REQUIRE(std::holds_alternative<ModernRequest>(checked));
    return listen_filter(std::get<ModernRequest>(checked), server);
  };
  auto kept = filter_of(R"({"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://a"]})");
  REQUIRE(std::holds_alternative<ListenFilter>(kept));
  CHECK(std::get<ListenFilter>(kept).to_json() == R"({"toolsListChanged":true,"resourceSubscriptions":["test://a"]})");
  CHECK(std::get<ModernAnswer>(filter_of(R"({"resourceSubscriptions":"test://a"})")).http_status == 400);
  auto tasks = filter_of(R"({"taskIds":["x"]})");
  REQUIRE(std::holds_alternative<ModernAnswer>(tasks));
  CHECK(std::get<ModernAnswer>(tasks).body.find("-32021") != std::string::npos);
  // With the extension declared, the ids asked for are honoured; a malformed list is not.
  const std::string with_tasks = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";
  auto honoured = filter_of(R"({"taskIds":["t1","t2"]})", with_tasks);
  REQUIRE(std::holds_alternative<ListenFilter>(honoured));
  CHECK(std::get<ListenFilter>(honoured).to_json() == R"({"taskIds":["t1","t2"]})");
  CHECK(std::get<ModernAnswer>(filter_of(R"({"taskIds":"t1"})", with_tasks)).http_status == 400);
  CHECK(std::get<ModernAnswer>(filter_of(R"({"taskIds":[1]})", with_tasks)).http_status == 400);
  // discover now announces what listen delivers.
  rapidjson::Document d;
  d.Parse(discover_result(server).c_str());
  CHECK(d["capabilities"]["tools"]["listChanged"].GetBool());
  CHECK(d["capabilities"]["resources"]["subscribe"].GetBool());
}
