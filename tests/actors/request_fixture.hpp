// The fixture of the tests of MCP 2026-07-28 request objects (mcp_request_test.cpp,
// modern_code_test.cpp): a runtime on virtual time with the mcp-request namespace over the
// testing and conformance fixtures, and one request sent as the endpoint would.
#pragma once

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_request.hpp"
#include "dorm/mcp/modern.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/session_id.hpp"
#include "dorm/runtime/keys.hpp"
#include "session_fixture.hpp"

namespace dorm::testing {

inline constexpr const char* kAll = R"({"sampling":{},"elicitation":{},"roots":{}})";

struct RequestFixture : RuntimeFixture {
  mcp::ToolRegistry tools;
  mcp::ResourceRegistry resources;
  mcp::PromptRegistry prompts;
  mcp::ModernServer server;
  actors::McpRequestOptions options;
  const mcp::Identity alice{"alice", "acme"};

  RequestFixture() {
    REQUIRE(actors::register_fixtures({tools, resources, prompts}, "testing").ok());
    REQUIRE(actors::register_fixtures({tools, resources, prompts}, "conformance").ok());
    server = mcp::ModernServer{"dorm-test", "9", &tools, &resources, &prompts};
    options.server = &server;
    options.state_ttl = std::chrono::minutes(5);
    add_namespace();
  }
  void add_namespace() { REQUIRE(actors::register_mcp_request(*runtime, options).ok()); }
  void restart() {
    stop();
    start();
    add_namespace();
  }

  // One request: params (without _meta) as JSON text, the capabilities declared, and the
  // requestState to send back (empty: none).
  HttpResponse send(std::string_view method, std::string params, std::string_view capabilities = kAll,
                    std::string_view state = {}, mcp::Identity who = {"alice", "acme"},
                    std::string_view task = {}) {
    std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":)" +
                       std::string(capabilities) + "}";
    params.insert(1, meta + (params.size() > 2 ? "," : ""));
    if (!state.empty()) params.insert(params.size() - 1, R"(,"requestState":")" + std::string(state) + "\"");
    auto body = mcp::parse_body(R"({"jsonrpc":"2.0","id":)" + std::to_string(++ids) + R"(,"method":")" +
                                std::string(method) + R"(","params":)" + params + "}");
    REQUIRE(std::holds_alternative<mcp::ParsedBody>(body));
    rapidjson::Document p;
    p.Parse(params.c_str());
    std::string name = p.HasMember("name") ? p["name"].GetString() : p.HasMember("taskId") ? p["taskId"].GetString() : "";
    mcp::ModernHeaders headers{"2026-07-28", method, name};
    auto checked = mcp::check_modern(headers, std::get<mcp::ParsedBody>(std::move(body)));
    REQUIRE(std::holds_alternative<mcp::ModernRequest>(checked));
    mcp::ModernCall call;
    call.request = std::get<mcp::ModernRequest>(std::move(checked));
    call.caller = std::move(who);
    if (!task.empty()) {
      call.handle = std::string(task);  // as the endpoint routes tasks/*
    } else if (state.empty()) {
      call.handle = *mcp::new_session_id();
    } else {
      // As the endpoint opens it, for the caller (a state that does not open never
      // reaches an object: see opens()).
      auto opened = mcp::open_request_state(state, call.caller, state_key());
      REQUIRE(opened.has_value());
      call.handle = opened->handle;
      call.round = opened->round;
      call.resumed = true;
    }
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    call.responder = std::make_shared<mcp::Responder>([answer](HttpResponse r) { *answer = std::move(r); });
    auto handle = runtime->get(runtime->id_from_name(actors::kMcpRequestNamespace, call.handle));
    REQUIRE(handle.ok());
    runtime->send(*handle, std::move(call));
    // With an engine, its callbacks come back as posts: delivered here until the answer
    // is there (bounded: 30 s of real time).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      runtime->run_until_idle();
      run_until(clock.now_ms());  // timers due now (a tool's after(0)) fire too
      if (answer->has_value() || !engine) break;
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      runtime->wait_for_posts(std::chrono::milliseconds(100));
    }
    REQUIRE(answer->has_value());
    HttpResponse out = std::move(**answer);
    // A streamed response: what its sink wrote.
    if (out.stream) {
      for (int i = 0; i < 100 && !read(out).over; ++i) runtime->run_until_idle();
    }
    return out;
  }

  // The JSON-RPC message of a response (its last SSE event when streamed).
  static rapidjson::Document message(const HttpResponse& r) {
    if (header(r, "Content-Type") == mcp::kEventStream) {
      auto all = events(r);
      REQUIRE_FALSE(all.empty());
      return std::move(all.back());
    }
    rapidjson::Document doc;
    doc.Parse(r.body.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    return doc;
  }

  std::string state_key() const { return runtime->derive_key(mcp::kRequestStateKeyPurpose); }
  // Whether the endpoint would take `state` from `who` to an object.
  bool opens(std::string_view state, const mcp::Identity& who) const {
    return mcp::open_request_state(state, who, state_key()).has_value();
  }

  std::size_t stored() { return count_prefix(memory, ""); }
  std::size_t count_index() {
    auto entries = runtime->scan_index("mcp.tasks");
    REQUIRE(entries.ok());
    return entries->size();
  }

  int ids = 0;
  bool engine = false;  // set by a fixture whose tools run code in an engine pool
};

inline std::string state_of(const rapidjson::Document& response) {
  REQUIRE(response.HasMember("result"));
  REQUIRE(std::string(response["result"]["resultType"].GetString()) == "input_required");
  return response["result"]["requestState"].GetString();
}

}  // namespace dorm::testing
