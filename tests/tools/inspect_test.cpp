// `dorm inspect`'s report over a store real MCP sessions wrote (on virtual time): what it
// collects, the JSON document and the text, limits and session selection.
#include "inspect.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <string>

#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/runtime/keys.hpp"
#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::mcp::HttpResponse;
using dorm::mcp::SessionCall;
using dorm::testing::RuntimeFixture;

namespace {

std::vector<mcp::Message> messages(std::string_view body) {
  auto parsed = mcp::parse_body(body);
  REQUIRE(std::holds_alternative<mcp::ParsedBody>(parsed));
  return std::get<mcp::ParsedBody>(parsed).messages;
}

struct SessionsFixture : RuntimeFixture {
  actors::McpSessionOptions options;
  mcp::ToolRegistry tools;

  SessionsFixture() {
    REQUIRE(actors::register_fixtures(tools, "testing").ok());
    options.tools = &tools;
    add_namespace();
  }
  void add_namespace() { REQUIRE(actors::register_mcp_session(*runtime, options).ok()); }

  // Sends a call; the answer, if one comes, lands in the returned slot.
  std::shared_ptr<std::optional<HttpResponse>> send(SessionCall::Kind kind,
                                                    const std::string& session,
                                                    std::string_view body) {
    SessionCall c;
    c.kind = kind;
    c.session_id = session;
    c.caller = {"alice", "acme"};
    if (!body.empty()) c.messages = messages(body);
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    c.responder =
        std::make_shared<mcp::Responder>([answer](HttpResponse r) { *answer = std::move(r); });
    auto handle = runtime->get(runtime->id_from_name(actors::kMcpSessionNamespace, session));
    REQUIRE(handle.ok());
    runtime->send(*handle, std::move(c));
    runtime->run_until_idle();
    return answer;
  }
  void open(const std::string& session) {
    auto init = send(
        SessionCall::Kind::initialize, session,
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"inspect-test","version":"7"}}})");
    REQUIRE(init->has_value());
    REQUIRE((*init)->status == 200);
  }
  void echo(const std::string& session, int id, const std::string& text) {
    auto r = send(SessionCall::Kind::post, session,
                  R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                      R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" +
                      text + R"("}}})");
    REQUIRE(r->has_value());
    REQUIRE((*r)->status == 200);
  }

  tools::StoreReport report(tools::InspectOptions o = {}) {
    auto r = tools::collect_report(memory, o);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().describe()));
    return std::move(r).value();
  }
};

using tools::StoreReport;

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  REQUIRE_FALSE(d.HasParseError());
  REQUIRE(d.IsObject());
  return d;
}

std::string id_of(SessionsFixture& f, const std::string& session) {
  return f.runtime->id_from_name(actors::kMcpSessionNamespace, session).to_string();
}

}  // namespace

TEST_CASE("inspect: a session's metadata, streams with decoded events, and an in-flight call") {
  SessionsFixture f;
  f.open("s-one");
  f.echo("s-one", 2, "hello from the test");
  // A call still running: its journal record and index entry are there.
  auto pending = f.send(
      SessionCall::Kind::post, "s-one",
      R"({"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}})");
  REQUIRE(pending->has_value());  // the response streams: its head came at once
  f.expected_active = 1;

  StoreReport report = f.report();
  CHECK(report.runtime.generation == f.runtime->generation());
  CHECK(report.sessions_total == 1);
  REQUIRE(report.sessions.size() == 1);
  const auto& s = report.sessions[0];
  CHECK(s.object.id == id_of(f, "s-one"));
  REQUIRE(s.snapshot.meta);
  CHECK(s.snapshot.meta->protocol_version == "2025-11-25");
  REQUIRE(s.snapshot.journal.size() == 1);
  CHECK(s.snapshot.journal[0].request_key == "s:slow-1");
  CHECK(s.snapshot.problems.empty());

  auto d = parse(tools::format_json(report));
  CHECK(d["readOnly"].GetBool());
  CHECK(d["runtime"]["generation"].GetUint64() == f.runtime->generation());
  CHECK(d["runtime"]["cleanShutdownGeneration"].IsNull());
  REQUIRE(d["namespaces"].Size() == 1);
  CHECK(std::string(d["namespaces"][0]["name"].GetString()) == "mcp-session");
  CHECK(d["namespaces"][0]["objects"].GetUint64() == 1);

  // The in-flight index, decoded: <session object id>/<request key>.
  const rapidjson::Value* inflight = nullptr;
  for (const auto& index : d["indexes"].GetArray()) {
    if (std::string(index["name"].GetString()) == "mcp.inflight") inflight = &index;
  }
  REQUIRE(inflight);
  CHECK((*inflight)["entries"].GetUint64() == 1);
  const auto& entry = (*inflight)["items"][0];
  CHECK(std::string(entry["session"].GetString()) == id_of(f, "s-one"));
  CHECK(std::string(entry["request"].GetString()) == "slow-1");
  CHECK(std::string(entry["key"].GetString()) == id_of(f, "s-one") + "/s:slow-1");

  const auto& session = d["sessions"]["items"][0];
  CHECK(std::string(session["id"].GetString()) == id_of(f, "s-one"));
  CHECK(std::string(session["meta"]["clientInfo"]["name"].GetString()) == "inspect-test");
  CHECK(std::string(session["meta"]["owner"]["user"].GetString()) == "alice");
  REQUIRE(session["journal"].Size() == 1);
  CHECK(std::string(session["journal"][0]["request"].GetString()) == "slow-1");
  CHECK_FALSE(session["journal"][0]["earlierGeneration"].GetBool());

  // Streams: echo's (finished, its result decoded) and sleep's (open); initialize answers
  // without a stored stream.
  bool saw_echo = false;
  bool saw_sleep = false;
  for (const auto& stream : session["streams"].GetArray()) {
    if (stream["request"].IsInt64() && stream["request"].GetInt64() == 2) {
      saw_echo = true;
      CHECK(stream["finished"].GetBool());
      REQUIRE(stream["events"].Size() == 2);
      CHECK(stream["events"][0]["priming"].GetBool());
      const auto& message = stream["events"][1]["message"];
      CHECK(message["id"].GetInt64() == 2);
      CHECK(std::string(message["result"]["content"][0]["text"].GetString()) ==
            "hello from the test");
      CHECK(std::string(stream["events"][1]["id"].GetString()) ==
            std::string(stream["id"].GetString()) + "-1");
    }
    if (stream["request"].IsString() && std::string(stream["request"].GetString()) == "slow-1") {
      saw_sleep = true;
      CHECK_FALSE(stream["finished"].GetBool());
      CHECK(std::string(stream["id"].GetString()) ==
            std::string(session["journal"][0]["stream"].GetString()));
    }
  }
  CHECK(saw_echo);
  CHECK(saw_sleep);

  std::string text = tools::format_text(report);
  CAPTURE(text);
  CHECK(text.find("generation   " + std::to_string(f.runtime->generation()) +
                  " (no clean-shutdown marker") != std::string::npos);
  CHECK(text.find("mcp-session  1 object") != std::string::npos);
  CHECK(text.find("index mcp.inflight: 1 entry\n  session " + id_of(f, "s-one") +
                  "  request \"slow-1\"") != std::string::npos);
  CHECK(text.find("session " + id_of(f, "s-one")) != std::string::npos);
  CHECK(text.find("client inspect-test 7") != std::string::npos);
  CHECK(text.find("owner        alice (acme)") != std::string::npos);
  CHECK(text.find("in flight    request \"slow-1\" on stream") != std::string::npos);
  CHECK(text.find(R"("text":"hello from the test")") != std::string::npos);
  CHECK(text.find("(priming)") != std::string::npos);
}

TEST_CASE(
    "inspect: after a crash, the record is from an earlier generation; the stream's events stay") {
  SessionsFixture f;
  f.open("s-crash");
  f.send(
      SessionCall::Kind::post, "s-crash",
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}})");
  std::uint64_t dead = f.runtime->generation();
  f.runtime->crash();
  f.runtime.reset();
  f.start();
  f.add_namespace();  // the session is not activated again: its record stays as it was

  auto d = parse(tools::format_json(f.report()));
  CHECK(d["runtime"]["generation"].GetUint64() == dead + 1);
  const auto& journal = d["sessions"]["items"][0]["journal"];
  REQUIRE(journal.Size() == 1);
  CHECK(journal[0]["generation"].GetUint64() == dead);
  CHECK(journal[0]["earlierGeneration"].GetBool());
  std::string text = tools::format_text(f.report());
  CHECK(text.find("activation") != std::string::npos);
  CHECK(text.find("(an earlier generation)") != std::string::npos);
}

TEST_CASE("inspect: --limit, --session by object id or MCP session id, --events") {
  SessionsFixture f;
  for (const char* s : {"s-a", "s-b", "s-c"}) f.open(s);
  for (int i = 0; i < 4; ++i) f.echo("s-b", 10 + i, "n" + std::to_string(i));
  f.expected_active = 3;

  tools::InspectOptions two;
  two.limit = 2;
  StoreReport limited = f.report(two);
  CHECK(limited.sessions_total == 3);
  CHECK(limited.sessions.size() == 2);
  CHECK(tools::format_text(limited).find("sessions: 3 stored, showing the first 2") !=
        std::string::npos);

  tools::InspectOptions all;
  all.session = "all";
  all.limit = 1;
  CHECK(f.report(all).sessions.size() == 3);

  for (std::string name : {std::string("s-b"), id_of(f, "s-b")}) {
    tools::InspectOptions one;
    one.session = name;
    one.events = 1;
    StoreReport r = f.report(one);
    REQUIRE(r.sessions.size() == 1);
    CHECK(r.sessions[0].object.id == id_of(f, "s-b"));
    for (const auto& stream : r.sessions[0].snapshot.streams) {
      CHECK(stream.events.size() == 1);  // the newest: the response
      CHECK_FALSE(stream.events[0].data.empty());
    }
    auto d = parse(tools::format_json(r));
    CHECK(std::string(d["sessions"]["selected"].GetString()) == name);
  }

  tools::InspectOptions missing;
  missing.session = "s-never";
  auto none = tools::collect_report(f.memory, missing);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ErrorCode::not_found);
  CHECK(none.error().message.find("no session 's-never'") != std::string::npos);
}

TEST_CASE("inspect: an empty store, and bytes that are not text") {
  storage::MemoryBackend empty;
  auto report = tools::collect_report(empty, {});
  REQUIRE(report.ok());
  auto d = parse(tools::format_json(*report));
  CHECK(d["runtime"]["generation"].IsNull());
  CHECK(d["namespaces"].Empty());
  CHECK(d["sessions"]["items"].Empty());
  std::string text = tools::format_text(*report);
  CHECK(text.find("none: no runtime has started on this store") != std::string::npos);

  // A user index whose key and value hold arbitrary bytes: valid JSON, readable text.
  storage::WriteBatch b;
  b.put(keys::index_entry("my.index", std::string("k\x01\xff", 3)), std::string("\x1b[31m", 5));
  REQUIRE(empty.commit(b).ok());
  auto odd = tools::collect_report(empty, {});
  REQUIRE(odd.ok());
  auto j = parse(tools::format_json(*odd));
  CHECK(std::string(j["indexes"][0]["items"][0]["key"].GetString()) == "k\\x01\\xff");
  CHECK(std::string(j["indexes"][0]["items"][0]["value"].GetString()) == "\x1b[31m");
  CHECK(tools::format_text(*odd).find("k\\x01\\xff = \\x1b[31m") != std::string::npos);
}
