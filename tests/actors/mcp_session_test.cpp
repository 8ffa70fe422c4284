// The MCP session object driven by SessionCall messages alone, on virtual time: creation
// by initialize, metadata that survives a restart, owner checks, batches by revision,
// DELETE.
#include <doctest/doctest.h>

#include <string>

#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/session_meta.hpp"
#include "dorm/runtime/keys.hpp"
#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::mcp::HttpResponse;
using dorm::mcp::Identity;
using dorm::mcp::SessionCall;
using dorm::testing::RuntimeFixture;

namespace {

std::vector<mcp::Message> messages(std::string_view body, bool* batch = nullptr) {
  auto parsed = mcp::parse_body(body);
  REQUIRE(std::holds_alternative<mcp::ParsedBody>(parsed));
  auto& ok = std::get<mcp::ParsedBody>(parsed);
  if (batch) *batch = ok.batch;
  return ok.messages;
}

struct SessionFixture : RuntimeFixture {
  actors::McpSessionOptions options;
  const Identity alice{"alice", "acme"};

  SessionFixture() { add_namespace(); }
  void add_namespace() { REQUIRE(actors::register_mcp_session(*runtime, options).ok()); }
  void restart() {
    stop();
    start();
    add_namespace();
  }

  HttpResponse call(SessionCall c) {
    auto handle = runtime->get(runtime->id_from_name(actors::kMcpSessionNamespace, c.session_id));
    REQUIRE(handle.ok());
    std::optional<caf::expected<caf::message>> reply;
    runtime->request(*handle, [&](caf::expected<caf::message> r) { reply = std::move(r); },
                     std::move(c));
    runtime->run_until_idle();
    REQUIRE(reply);
    REQUIRE_MESSAGE(static_cast<bool>(*reply), describe(reply->error()));
    REQUIRE((*reply)->match_elements<HttpResponse>());
    return (*reply)->get_as<HttpResponse>(0);
  }

  HttpResponse initialize(const std::string& session, std::string_view version = "2025-11-25",
                          Identity who = {"alice", "acme"}) {
    SessionCall c;
    c.kind = SessionCall::Kind::initialize;
    c.session_id = session;
    c.caller = std::move(who);
    c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" +
                          std::string(version) +
                          R"(","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}})");
    return call(std::move(c));
  }

  HttpResponse post(const std::string& session, std::string_view body, Identity who = {"alice", "acme"}) {
    SessionCall c;
    c.kind = SessionCall::Kind::post;
    c.session_id = session;
    c.caller = std::move(who);
    c.messages = messages(body, &c.batch);
    return call(std::move(c));
  }

  HttpResponse simple(SessionCall::Kind kind, const std::string& session, Identity who = {"alice", "acme"}) {
    SessionCall c;
    c.kind = kind;
    c.session_id = session;
    c.caller = std::move(who);
    return call(std::move(c));
  }
};

std::string header(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return {};
}

}  // namespace

TEST_CASE("mcp session: initialize creates it; ping and notifications work; the metadata is stored") {
  SessionFixture f;
  auto init = f.initialize("s-0123456789abcdef");
  CHECK(init.status == 200);
  CHECK(header(init, "Content-Type") == "text/event-stream");
  CHECK(header(init, "Mcp-Session-Id") == "s-0123456789abcdef");
  CHECK(init.body.find(R"("protocolVersion":"2025-11-25")") != std::string::npos);
  CHECK(init.body.rfind("event: message\ndata: {", 0) == 0);

  auto initialized = f.post("s-0123456789abcdef", R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK(initialized.status == 202);
  CHECK(initialized.body.empty());

  auto ping = f.post("s-0123456789abcdef", R"({"jsonrpc":"2.0","id":"p1","method":"ping"})");
  CHECK(ping.status == 200);
  CHECK(ping.body == "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"result\":{}}\n\n");

  auto unknown = f.post("s-0123456789abcdef", R"({"jsonrpc":"2.0","id":2,"method":"no/such"})");
  CHECK(unknown.status == 200);
  CHECK(unknown.body.find("-32601") != std::string::npos);

  // A response to a server request nobody issued: accepted and dropped.
  CHECK(f.post("s-0123456789abcdef", R"({"jsonrpc":"2.0","id":9,"result":{}})").status == 202);
  f.expected_active = 1;
}

TEST_CASE("mcp session: versions are negotiated; an unknown one gets the latest") {
  SessionFixture f;
  CHECK(f.initialize("s-aaaaaaaaaaaaaaaa", "2025-06-18").body.find(R"("protocolVersion":"2025-06-18")") != std::string::npos);
  CHECK(f.initialize("s-bbbbbbbbbbbbbbbb", "2024-01-01").body.find(R"("protocolVersion":"2025-11-25")") != std::string::npos);
  f.expected_active = 2;
}

TEST_CASE("mcp session: it survives a runtime restart without a new initialize") {
  SessionFixture f;
  REQUIRE(f.initialize("s-restart-000000001").status == 200);
  f.expected_active = 1;
  f.restart();
  auto ping = f.post("s-restart-000000001", R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  CHECK(ping.status == 200);
  CHECK(ping.body.find(R"("id":7,"result":{})") != std::string::npos);
  f.expected_active = 1;
}

TEST_CASE("mcp session: another identity, an unknown session and a deleted one all get the same 404") {
  SessionFixture f;
  REQUIRE(f.initialize("s-owned-0000000001").status == 200);
  auto foreign = f.post("s-owned-0000000001", R"({"jsonrpc":"2.0","id":1,"method":"ping"})", {"mallory", "acme"});
  auto other_org = f.post("s-owned-0000000001", R"({"jsonrpc":"2.0","id":1,"method":"ping"})", {"alice", "other"});
  auto unknown = f.post("s-never-made-00001", R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(foreign.status == 404);
  CHECK(other_org.status == 404);
  CHECK(unknown.status == 404);
  CHECK(foreign.body == unknown.body);
  CHECK(f.simple(SessionCall::Kind::remove, "s-owned-0000000001", {"mallory", "acme"}).status == 404);

  // The owner deletes it: everything it stored is gone, later calls get 404.
  CHECK(f.simple(SessionCall::Kind::remove, "s-owned-0000000001").status == 200);
  CHECK(f.post("s-owned-0000000001", R"({"jsonrpc":"2.0","id":1,"method":"ping"})").status == 404);
  CHECK(f.simple(SessionCall::Kind::remove, "s-owned-0000000001").status == 404);
  auto id = f.runtime->id_from_name(actors::kMcpSessionNamespace, "s-owned-0000000001");
  auto rows = f.memory.scan(storage::ScanOptions::with_prefix(keys::object_prefix(id.ns(), id.body())));
  REQUIRE(rows.ok());
  CHECK(rows->empty());
  f.expected_active = 2;
}

TEST_CASE("mcp session: batches only for 2025-03-26 sessions; initialize twice is refused") {
  SessionFixture f;
  REQUIRE(f.initialize("s-new-00000000000001").status == 200);
  REQUIRE(f.initialize("s-old-00000000000001", "2025-03-26").status == 200);
  const char* batch = R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}])";
  auto refused = f.post("s-new-00000000000001", batch);
  CHECK(refused.status == 400);
  CHECK(refused.body.find("-32600") != std::string::npos);
  auto accepted = f.post("s-old-00000000000001", batch);
  CHECK(accepted.status == 200);
  CHECK(accepted.body.find(R"("id":1,"result":{})") != std::string::npos);
  CHECK(accepted.body.find(R"("id":2,"result":{})") != std::string::npos);

  auto again = f.post("s-new-00000000000001",
                      R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  CHECK(again.status == 400);
  CHECK(again.body.find("-32600") != std::string::npos);
  // An initialize call that would overwrite an existing session is refused too.
  CHECK(f.initialize("s-new-00000000000001").status == 400);
  f.expected_active = 2;
}

TEST_CASE("mcp session: initialize without protocolVersion is invalid params and creates nothing") {
  SessionFixture f;
  SessionCall c;
  c.kind = SessionCall::Kind::initialize;
  c.session_id = "s-bad-params-000001";
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}})");
  auto res = f.call(std::move(c));
  CHECK(res.status == 400);
  CHECK(res.body.find("-32602") != std::string::npos);
  CHECK(f.post("s-bad-params-000001", R"({"jsonrpc":"2.0","id":1,"method":"ping"})").status == 404);
  f.expected_active = 1;
}

TEST_CASE("session metadata: round-trips through JSON; garbage is corruption") {
  mcp::SessionMeta meta;
  meta.protocol_version = "2025-06-18";
  meta.client_capabilities = R"({"elicitation":{}})";
  meta.client_info = R"({"name":"x"})";
  meta.owner = {"u", "o"};
  meta.log_level = "debug";
  meta.created_ms = 123;
  meta.initialized = true;
  auto back = mcp::SessionMeta::from_json(meta.to_json());
  REQUIRE(back.ok());
  CHECK(back->to_json() == meta.to_json());
  CHECK(back->owner == meta.owner);
  for (const char* bad : {"", "[]", "{}", R"({"protocolVersion":1})"}) {
    auto r = mcp::SessionMeta::from_json(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::corruption);
  }
}
