// The MCP session object driven by SessionCall messages alone, on virtual time: creation
// by initialize, metadata that survives a restart, owner checks, batches by revision,
// DELETE.
#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/endpoint.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/notification_budget.hpp"
#include "dorm/mcp/session_keys.hpp"
#include "dorm/mcp/session_meta.hpp"
#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/keys.hpp"
#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;


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
  // A stream of its own: the priming event (an id, the retry hint, empty data), then the
  // response, each with an id <stream>-<seq>.
  auto first_line = ping.body.substr(0, ping.body.find('\n'));
  REQUIRE(first_line.rfind("id: ", 0) == 0);
  auto primed = mcp::parse_event_id(first_line.substr(4));
  REQUIRE(primed);
  CHECK(primed->seq == 0);
  CHECK(ping.body == "id: " + primed->to_string() + "\nretry: 500\ndata: \n\n" + "id: " +
                         mcp::EventId{primed->stream, 1}.to_string() +
                         "\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"result\":{}}\n\n");

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
  // A NUL is part of the string: "2025-06-18\u0000x" is no version we know.
  CHECK(f.initialize("s-cccccccccccccccc", "2025-06-18\\u0000x").body.find(R"("protocolVersion":"2025-11-25")") != std::string::npos);
  f.expected_active = 3;
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
  f.expected_active = 0;  // neither the unknown session nor the deleted one stays in memory
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

TEST_CASE("mcp session: a batch holding initialize is refused whole: nothing runs, nothing is stored") {
  SessionFixture f;
  const std::string s = "s-batch-init-000001";
  REQUIRE(f.initialize(s, "2025-03-26").status == 200);
  auto object = f.runtime->id_from_name(actors::kMcpSessionNamespace, s);
  auto stored = [&] {
    auto rows = f.memory.scan(storage::ScanOptions::with_prefix(keys::object_prefix(object.ns(), object.body())));
    REQUIRE(rows.ok());
    std::vector<std::string> keys;
    for (const auto& kv : *rows) {
      // Last activity is written for every request that reaches the session.
      if (!kv.key.ends_with(std::string(1, keys::kObjectData) + "a")) keys.push_back(kv.key);
    }
    return keys;
  };
  const auto before = stored();
  auto refused = f.post(s, R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kv_put","arguments":{"key":"k","value":"v"}}},)"
                           R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}])");
  CHECK(refused.status == 400);
  CHECK(refused.body.find("already initialized") != std::string::npos);
  // The kv_put did not run, and no stream was opened for the refused POST.
  CHECK(stored() == before);
  auto read = f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":"k"}}})");
  CHECK(read.body.find("no value stored under 'k'") != std::string::npos);
  f.expected_active = 1;
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
  f.expected_active = 0;
}

namespace {
// A fresh 32-hex session id, as a hostile client would make one up.
std::string made_up_session(int i) {
  char text[33];
  std::snprintf(text, sizeof text, "%08x%08x%08x%08x", 0xdead0000u + static_cast<unsigned>(i),
                0x5e55u, static_cast<unsigned>(i) * 2654435761u, 0xbeefu);
  return text;
}
}  // namespace

TEST_CASE("mcp session: unknown session ids leave nothing behind; nor do sessions created and deleted") {
  SessionFixture f;
  const auto stored_before = count_prefix(f.memory, "");
  constexpr int kUnknown = 300;
  for (int i = 0; i < kUnknown; ++i) {
    const auto s = made_up_session(i);
    CHECK(f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"ping"})").status == 404);
    CHECK(f.simple(SessionCall::Kind::get, s).status == 404);
    CHECK(f.simple(SessionCall::Kind::remove, s).status == 404);
  }
  // No activation, no directory record, no key: each lookup left nothing.
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.runtime->remembered_ids() == 0);
  CHECK(count_prefix(f.memory, "") == stored_before);

  // A refused initialize creates nothing either.
  SessionCall bad;
  bad.kind = SessionCall::Kind::initialize;
  bad.session_id = made_up_session(kUnknown);
  bad.caller = f.alice;
  bad.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  CHECK(f.call(std::move(bad)).status == 400);
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.runtime->remembered_ids() == 0);

  // Created, used, deleted: DELETE frees what the session held, in memory as in storage.
  constexpr int kSessions = 50;
  for (int i = 0; i < kSessions; ++i) {
    const auto s = made_up_session(1000 + i);
    REQUIRE(f.initialize(s).status == 200);
    CHECK(f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})").status == 200);
    CHECK(f.runtime->active_objects() == 1);
    CHECK(f.simple(SessionCall::Kind::remove, s).status == 200);
    CHECK(f.runtime->active_objects() == 0);
  }
  CHECK(f.runtime->remembered_ids() == 0);
  CHECK(count_prefix(f.memory, "") == stored_before);

  // Deleted while a call runs: the call stops with the session (no result, no journal
  // record or index entry), and the session leaves memory despite the call's lease.
  const auto busy = made_up_session(2000);
  REQUIRE(f.initialize(busy).status == 200);
  auto running = std::make_shared<std::optional<HttpResponse>>();
  SessionCall call;
  call.kind = SessionCall::Kind::post;
  call.session_id = busy;
  call.caller = f.alice;
  call.messages = messages(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":5000}}})");
  f.send(std::move(call), running);
  f.runtime->run_until_idle();
  REQUIRE(f.runtime->scan_index(mcp::kInflightIndex)->size() == 1);
  CHECK(f.simple(SessionCall::Kind::remove, busy).status == 200);
  CHECK(f.runtime->active_objects() == 0);
  f.run_until(f.clock.now_ms() + 10'000);
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.runtime->scan_index(mcp::kInflightIndex)->empty());
  CHECK(count_prefix(f.memory, "") == stored_before);
  CHECK(f.runtime->remembered_ids() == 0);
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


TEST_CASE("tools/list: pages of 2 list every tool once; a bad cursor is -32602") {
  SessionFixture f;
  REQUIRE(f.initialize("s-tools-list-00001").status == 200);
  std::vector<std::string> names;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    std::string params = cursor.empty() ? "{}" : R"({"cursor":")" + cursor + R"("})";
    auto res = f.post("s-tools-list-00001", R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":)" + params + "}");
    auto ev = events(res);
    REQUIRE(ev.size() == 1);
    const auto& result = ev[0]["result"];
    CHECK(result["tools"].Size() <= 2);
    for (const auto& tool : result["tools"].GetArray()) {
      names.push_back(tool["name"].GetString());
      CHECK(tool["inputSchema"].IsObject());
      CHECK(tool["description"].IsString());
    }
    if (!result.HasMember("nextCursor")) break;
    cursor = result["nextCursor"].GetString();
  }
  CHECK(names == std::vector<std::string>{"echo", "sleep", "kv_put", "kv_get", "spin", "flood", "announce", "ask", "add",
                                           "counter_get", "counter_increment", "tally", "ledger_append",
                                           "ledger_read"});
  for (const char* bad : {R"("nope")", R"("")", "42"}) {
    auto res = f.post("s-tools-list-00001",
                      std::string(R"({"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":)") + bad + "}}");
    auto ev = events(res);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["error"]["code"].GetInt() == -32602);
  }
  f.expected_active = 1;
}

TEST_CASE("tools/call: echo; kv_put then kv_get, also after a restart; bad calls") {
  SessionFixture f;
  const std::string s = "s-tools-call-00001";
  REQUIRE(f.initialize(s).status == 200);
  auto echo = events(f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})"));
  REQUIRE(echo.size() == 1);
  CHECK(text_of(echo[0]) == "hi");
  CHECK_FALSE(echo[0]["result"]["isError"].GetBool());

  events(f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kv_put","arguments":{"key":"k","value":"v1"}}})"));
  f.expected_active = 1;
  f.restart();
  auto got = events(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":"k"}}})"));
  CHECK(text_of(got[0]) == "v1");
  auto missing = events(f.post(s, R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":"other"}}})"));
  CHECK(missing[0]["result"]["isError"].GetBool());

  // Arguments that do not fit the schema: a tool result with isError, not a protocol error.
  auto invalid = events(f.post(s, R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":7}}})"));
  CHECK(invalid[0]["result"]["isError"].GetBool());
  CHECK(text_of(invalid[0]).find("input schema") != std::string::npos);
  auto unknown = events(f.post(s, R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}})"));
  CHECK(unknown[0]["error"]["code"].GetInt() == -32602);
  auto no_name = events(f.post(s, R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}})"));
  CHECK(no_name[0]["error"]["code"].GetInt() == -32602);
  // A name with a NUL and more after it names no tool (read as a C string it was kv_put,
  // which then ran and stored v2).
  auto nul = events(f.post(s, R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"kv_put\u0000x","arguments":{"key":"k","value":"v2"}}})"));
  CHECK(nul[0]["error"]["code"].GetInt() == -32602);
  auto kept = events(f.post(s, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":"k"}}})"));
  CHECK(text_of(kept[0]) == "v1");
}

namespace {
std::string ledger_call(int id, const std::string& tool, const std::string& arguments) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" + tool +
         R"(","arguments":)" + arguments + "}}";
}

// The tokens ledger_read returns, in order.
std::vector<std::string> ledger_tokens(SessionFixture& f, const std::string& session, int id) {
  auto ev = events(f.post(session, ledger_call(id, "ledger_read", "{}")));
  REQUIRE(ev.size() == 1);
  REQUIRE_FALSE(ev[0]["result"]["isError"].GetBool());
  std::vector<std::string> tokens;
  for (const auto& t : ev[0]["result"]["structuredContent"]["tokens"].GetArray()) tokens.emplace_back(t.GetString());
  return tokens;
}
}  // namespace

TEST_CASE("tools/call ledger_append and ledger_read: a list per session, in append order, a repeat kept twice, durable") {
  SessionFixture f;
  const std::string a = "s-ledger-a-000001";
  const std::string b = "s-ledger-b-000001";
  REQUIRE(f.initialize(a).status == 200);
  REQUIRE(f.initialize(b).status == 200);
  CHECK(ledger_tokens(f, a, 2).empty());
  int id = 3;
  for (const char* token : {"t-1", "t-2", "t-1"}) {
    auto ev = events(f.post(a, ledger_call(id++, "ledger_append", std::string(R"({"token":")") + token + "\"}")));
    REQUIRE(ev.size() == 1);
    CHECK(text_of(ev[0]) == token);
  }
  REQUIRE(events(f.post(b, ledger_call(id++, "ledger_append", R"({"token":"u-1"})"))).size() == 1);
  CHECK(ledger_tokens(f, a, id++) == std::vector<std::string>{"t-1", "t-2", "t-1"});
  CHECK(ledger_tokens(f, b, id++) == std::vector<std::string>{"u-1"});

  // Bad tokens are error results and append nothing.
  for (const char* bad : {R"({"token":""})", R"({})", R"({"token":7})", R"({"token":"x","more":1})"}) {
    auto ev = events(f.post(a, ledger_call(id++, "ledger_append", bad)));
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["result"]["isError"].GetBool());
  }

  f.expected_active = 2;
  f.restart();
  CHECK(ledger_tokens(f, a, id++) == std::vector<std::string>{"t-1", "t-2", "t-1"});
  REQUIRE(events(f.post(a, ledger_call(id++, "ledger_append", R"({"token":"t-3"})"))).size() == 1);
  CHECK(ledger_tokens(f, a, id++) == std::vector<std::string>{"t-1", "t-2", "t-1", "t-3"});
  CHECK(ledger_tokens(f, b, id++) == std::vector<std::string>{"u-1"});
  f.expected_active = 2;
}

TEST_CASE("tools/call sleep: the response streams live: priming at once, progress every second, then the result") {
  SessionFixture f;
  const std::string s = "s-tools-sleep-0001";
  REQUIRE(f.initialize(s).status == 200);
  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":2500},"_meta":{"progressToken":"tok"}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  // The response starts before the work ends: its head and the priming event.
  REQUIRE(answer->has_value());
  auto& res = **answer;
  CHECK(res.status == 200);
  CHECK(header(res, "Content-Type") == "text/event-stream");
  REQUIRE(res.stream);
  CHECK_FALSE(read(res).over);
  CHECK(res.body.find("retry: 500\ndata: \n\n") != std::string::npos);
  CHECK(events(res).empty());
  // Another request on the same session is answered meanwhile.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"ping"})").status == 200);
  const auto start = f.clock.now_ms();
  f.run_until(start + 1000);
  CHECK_FALSE(read(res).over);
  CHECK(events(res).size() == 1);  // the first progress, live
  f.run_until(start + 2499);
  CHECK_FALSE(read(res).over);
  CHECK(events(res).size() == 2);
  f.run_until(start + 2500);
  auto state = read(res);
  CHECK(state.over);
  CHECK_FALSE(state.aborted);
  auto ev = events(res);
  REQUIRE(ev.size() == 4);
  std::vector<double> progress;
  for (int i = 0; i < 3; ++i) {
    CHECK(std::string(ev[i]["method"].GetString()) == "notifications/progress");
    CHECK(std::string(ev[i]["params"]["progressToken"].GetString()) == "tok");
    progress.push_back(ev[i]["params"]["progress"].GetDouble());
  }
  CHECK(progress == std::vector<double>{1000, 2000, 2500});
  CHECK(text_of(ev[3]) == "slept 2500 ms");
  f.expected_active = 1;
}

TEST_CASE("tools/call: a progressToken over 256 bytes is refused before the tool runs") {
  SessionFixture f;
  const std::string s = "s-progress-token-01";
  REQUIRE(f.initialize(s).status == 200);
  auto call = [&](int id, const std::string& token) {
    return f.post(s, R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                         R"(,"method":"tools/call","params":{"name":"kv_put","arguments":{"key":"k)" +
                         std::to_string(id) + R"(","value":"v"},"_meta":{"progressToken":")" + token +
                         R"("}}})");
  };
  auto refused = events(call(1, std::string(257, 't')));
  REQUIRE(refused.size() == 1);
  CHECK(refused[0]["error"]["code"].GetInt() == -32602);
  CHECK(std::string(refused[0]["error"]["message"].GetString()) ==
        "params._meta.progressToken is 257 bytes; the limit is 256");
  auto absent = f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":"k1"}}})");
  CHECK(absent.body.find("no value stored under 'k1'") != std::string::npos);
  // At the limit it runs.
  auto accepted = events(call(3, std::string(256, 't')));
  REQUIRE(accepted.size() == 1);
  CHECK(accepted[0]["result"].IsObject());
  f.expected_active = 1;
}

TEST_CASE("tools/call: a tool reporting progress in a loop is held to the call's notification budget") {
  SessionFixture f;
  const std::string s = "s-progress-flood-01";
  REQUIRE(f.initialize(s).status == 200);
  // 1,000 notifications in one turn: the burst passes, the rest are dropped, the result is not.
  auto ev = events(f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{"count":1000,"bytes":16},"_meta":{"progressToken":"p"}}})"));
  REQUIRE(ev.size() == static_cast<std::size_t>(mcp::NotificationLimits{}.burst) + 1);
  double last = 0;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    CHECK(std::string(ev[i]["method"].GetString()) == "notifications/progress");
    CHECK(ev[i]["params"]["progress"].GetDouble() > last);
    last = ev[i]["params"]["progress"].GetDouble();
  }
  CHECK(text_of(ev.back()) == "sent 1000 progress notifications");
  // Another call has a budget of its own.
  auto next = events(f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"count":3,"bytes":1},"_meta":{"progressToken":"q"}}})"));
  CHECK(next.size() == 4);
  f.expected_active = 1;
}

TEST_CASE("logging/setLevel: a valid level is stored, anything else is -32602") {
  SessionFixture f;
  const std::string s = "s-logging-0000001";
  REQUIRE(f.initialize(s).status == 200);
  auto ok = events(f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}})"));
  CHECK(ok[0]["result"].IsObject());
  auto bad = events(f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}})"));
  CHECK(bad[0]["error"]["code"].GetInt() == -32602);
  auto nul = events(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"error\u0000loud"}})"));
  CHECK(nul[0]["error"]["code"].GetInt() == -32602);
  f.expected_active = 1;
  f.restart();
  // The level is part of the stored metadata.
  auto id = f.runtime->id_from_name(actors::kMcpSessionNamespace, s);
  auto raw = f.memory.get(keys::object_prefix(id.ns(), id.body()) + keys::kObjectData + std::string(mcp::session_keys::kMeta));
  REQUIRE(raw.ok());
  REQUIRE(raw->has_value());
  CHECK(mcp::SessionMeta::from_json(**raw)->log_level == "debug");
  f.expected_active = 0;
}


TEST_CASE("streams: no priming for a 2025-06-18 session; ids unique across its streams") {
  SessionFixture f;
  const std::string s = "s-old-version-0001";
  REQUIRE(f.initialize(s, "2025-06-18").status == 200);
  std::set<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto res = f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
    CHECK(res.body.find("retry:") == std::string::npos);
    auto id = event_id(res, 0);
    REQUIRE(id);
    CHECK(ids.insert(id->to_string()).second);
  }
  f.expected_active = 1;
}

TEST_CASE("journal and resume: a record exists exactly while its call runs; a resume takes the stream over live; then 204") {
  SessionFixture f;
  const std::string s = "s-journal-resume01";
  REQUIRE(f.initialize(s).status == 200);
  auto object = f.runtime->id_from_name(actors::kMcpSessionNamespace, s);
  std::string journal = keys::object_prefix(object.ns(), object.body()) + keys::kObjectData + "j/";
  std::string index = keys::index_entry("mcp.inflight", "");
  CHECK(count_prefix(f.memory, journal) == 0);

  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":2000},"_meta":{"progressToken":1}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  CHECK(count_prefix(f.memory, journal) == 1);
  auto entries = f.runtime->scan_index("mcp.inflight");
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].key == object.to_string() + "/s:call-1");

  // The stream's id is known from its priming event (stored before any work).
  auto streams = count_prefix(f.memory, keys::object_prefix(object.ns(), object.body()) + keys::kObjectData + "l/");
  CHECK(streams == 1);
  auto rows = f.memory.scan(storage::ScanOptions::with_prefix(keys::object_prefix(object.ns(), object.body()) + keys::kObjectData + "l/"));
  std::string stream_hex = (*rows)[0].key.substr((*rows)[0].key.size() - 16);
  mcp::EventId primed = *mcp::parse_event_id(stream_hex + "-0");

  // After the first progress, a resume from the priming event while the call runs:
  // it replays that progress, then carries the stream live; the POST's connection,
  // replaced, ends cleanly.
  REQUIRE(answer->has_value());
  f.run_until(f.clock.now_ms() + 1000);
  CHECK(events(**answer).empty());  // this client read nothing
  SessionCall get;
  get.kind = SessionCall::Kind::get;
  get.session_id = s;
  get.caller = f.alice;
  get.last_event_id = primed.to_string();
  auto resumed = std::make_shared<std::optional<HttpResponse>>();
  f.send(get, resumed);
  f.runtime->run_until_idle();
  REQUIRE(resumed->has_value());
  CHECK_FALSE(read(**resumed).over);
  CHECK(events(**resumed).size() == 1);
  auto post_state = read(**answer);
  CHECK(post_state.over);
  CHECK_FALSE(post_state.aborted);

  f.run_until(f.clock.now_ms() + 1000);
  CHECK(read(**resumed).over);
  CHECK(count_prefix(f.memory, journal) == 0);
  CHECK(f.runtime->scan_index("mcp.inflight")->empty());
  auto replayed = events(**resumed);
  REQUIRE(replayed.size() == 3);  // progress 1000, 2000, the result: each once
  CHECK(replayed[0]["params"]["progress"].GetDouble() == 1000);
  CHECK(replayed[1]["params"]["progress"].GetDouble() == 2000);
  CHECK(text_of(replayed[2]) == "slept 2000 ms");
  // The POST connection carried the priming event and, before it was replaced, the
  // first progress; nothing after.
  CHECK(events(**answer).size() == 1);

  // Nothing after the last event of a finished stream: 204, for the whole retention.
  auto last = event_id(**resumed, 3);
  REQUIRE(last);
  get.last_event_id = last->to_string();
  CHECK(f.call(get).status == 204);
  f.run_until(f.clock.now_ms() + 14 * 60 * 1000 + 59 * 1000);
  CHECK(f.call(get).status == 204);
  get.last_event_id = primed.to_string();
  CHECK(events(f.call(get)).size() == 3);
  // Past 15 minutes the retention alarm removes the stream: its keys are gone.
  f.run_until(f.clock.now_ms() + 2000);
  CHECK(count_prefix(f.memory, keys::object_prefix(object.ns(), object.body()) + keys::kObjectData + "e/") == 0);
  CHECK(f.call(get).status == 400);
  f.expected_active = 1;
}

TEST_CASE("resume: another session's, unknown and malformed Last-Event-IDs all get the same 400") {
  SessionFixture f;
  REQUIRE(f.initialize("s-resume-a-0000001").status == 200);
  REQUIRE(f.initialize("s-resume-b-0000001").status == 200);
  auto a = f.post("s-resume-a-0000001", R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  auto a_id = event_id(a, 0);
  REQUIRE(a_id);
  SessionCall get;
  get.kind = SessionCall::Kind::get;
  get.session_id = "s-resume-b-0000001";
  get.caller = f.alice;
  std::vector<HttpResponse> answers;
  for (std::string cursor : {a_id->to_string(), std::string("0123456789abcdef-1"), std::string("garbage"),
                             mcp::EventId{a_id->stream, 99}.to_string()}) {
    get.last_event_id = cursor;
    answers.push_back(f.call(get));
  }
  for (const auto& r : answers) {
    CHECK(r.status == 400);
    CHECK(r.body == answers[0].body);
  }
  // The owner session resumes its own stream fine.
  get.session_id = "s-resume-a-0000001";
  get.last_event_id = a_id->to_string();
  auto own = f.call(get);
  CHECK(own.status == 200);
  CHECK(events(own).size() == 1);
  f.expected_active = 2;
}

TEST_CASE("journal: when the commit of the final response fails, the record stays for the reaper; 204 after an error response") {
  SessionFixture f;
  const std::string s = "s-journal-fail-001";
  REQUIRE(f.initialize(s).status == 200);
  auto object = f.runtime->id_from_name(actors::kMcpSessionNamespace, s);
  std::string journal = keys::object_prefix(object.ns(), object.body()) + keys::kObjectData + "j/";

  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1000}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  CHECK(count_prefix(f.memory, journal) == 1);
  CHECK(f.runtime->scan_index("mcp.inflight")->size() == 1);
  // The turn that would store the result (and drop the record) fails to commit: the
  // session resets, its open connection is cut (the client will resume), and the record
  // is still there.
  REQUIRE(answer->has_value());
  CHECK((**answer).status == 200);
  f.faulty.fail_commit(1);
  f.run_until(f.clock.now_ms() + 1000);
  auto state = read(**answer);
  CHECK(state.over);
  CHECK(state.aborted);
  CHECK(count_prefix(f.memory, journal) == 1);
  CHECK(f.runtime->scan_index("mcp.inflight")->size() == 1);

  // An error response ends its stream too: a resume after it gets 204.
  auto err = f.post(s, R"({"jsonrpc":"2.0","id":6,"method":"no/such"})");
  auto last = event_id(err, 1);
  REQUIRE(last);
  SessionCall get;
  get.kind = SessionCall::Kind::get;
  get.session_id = s;
  get.caller = f.alice;
  get.last_event_id = last->to_string();
  CHECK(f.call(get).status == 204);
  f.expected_active = 1;
}

TEST_CASE("a tool result over the 4 MiB stream limit is replaced by an error result naming its size") {
  SessionFixture f;
  const std::string s = "s-big-result-00001";
  REQUIRE(f.initialize(s).status == 200);
  std::string text(4 * 1024 * 1024 + 10, 'q');
  auto res = f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" + text + R"("}}})");
  auto ev = events(res);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["result"]["isError"].GetBool());
  CHECK(text_of(ev[0]).find("is over the stream limit of 4194304 bytes") != std::string::npos);
  CAPTURE(text_of(ev[0]));
  CHECK(text_of(ev[0]).find("the result of 4194") != std::string::npos);
  f.expected_active = 1;
}

TEST_CASE("endpoint: a failed turn or a reset object is 503 with Retry-After, like a busy or restarting server") {
  using dorm::mcp::to_response;
  for (auto code : {RuntimeErrc::object_reset, RuntimeErrc::turn_failed, RuntimeErrc::overloaded,
                    RuntimeErrc::stopped, RuntimeErrc::node_restarting}) {
    CAPTURE(to_string(code));
    auto r = to_response(make_error(code, "why"));
    CHECK(r.status == 503);
    CHECK(header(r, "Retry-After") == "1");
    CHECK(r.body.find("why") != std::string::npos);
  }
  // What a resend cannot fix is a server error.
  auto r = to_response(make_error(RuntimeErrc::unknown_namespace, "no such namespace"));
  CHECK(r.status == 500);
  CHECK(r.body.find("-32603") != std::string::npos);
}

TEST_CASE("tools/call kv_put of 200 KiB: a tool error naming the limit; the session is not reset and keeps working") {
  SessionFixture f;
  const std::string s = "s-kv-too-big-0001";
  REQUIRE(f.initialize(s).status == 200);
  const std::string big(200 * 1024, 'x');
  auto res = f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kv_put","arguments":{"key":"big","value":")" + big + R"("}}})");
  CHECK(res.status == 200);
  auto ev = events(res);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["result"]["isError"].GetBool());
  CHECK(text_of(ev[0]) == "value of 204800 bytes exceeds the limit of 131072 bytes");
  // Nothing was stored under the key, and the same activation answers the next call.
  ev = events(f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":"big"}}})"));
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]) == "no value stored under 'big'");
  CHECK(f.tracer.spans_named(trace::kResetSpan).empty());
  f.expected_active = 1;
}

TEST_CASE("a store failure while a tool finishes fails the turn: the session resets and the reaper answers the call") {
  SessionFixture f(false);
  // Without a cache: with one, the session's reads are served from memory once loaded,
  // and the read this test makes fail would not reach the store.
  f.options.storage_cache_bytes = 0;
  f.add_namespace();
  const std::string s = "s-finish-fails-001";
  REQUIRE(f.initialize(s).status == 200);
  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1000}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  REQUIRE(answer->has_value());
  read(**answer);
  auto primed = event_id(**answer, 0);
  REQUIRE(primed);
  // Storing the result needs a read of the stream's record, which fails.
  f.faulty.fail_reads(1);
  f.run_until(f.clock.now_ms() + 1000);
  auto state = read(**answer);
  CHECK(state.over);
  CHECK(state.aborted);  // cut, not ended: the client resumes
  CHECK(f.tracer.spans_named(trace::kResetSpan).size() == 1);
  // The resume activates the session again; its reaper has answered the call.
  SessionCall get;
  get.kind = SessionCall::Kind::get;
  get.session_id = s;
  get.caller = f.alice;
  get.last_event_id = primed->to_string();
  auto resumed = f.call(get);
  CHECK(resumed.status == 200);
  auto ev = events(resumed);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["id"].GetInt() == 5);
  CHECK(ev[0]["error"]["code"].GetInt() == -32001);
  CHECK(std::string(ev[0]["error"]["data"]["reason"].GetString()) == "session_reset");
  f.expected_active = 1;
}

TEST_CASE("tools/call: a tool finishes from another thread through post(); after a cancel the post is dropped") {
  SessionFixture f(false);
  // The handler hands its context to a thread of its own (as a library's callback or
  // another object's reply would arrive), which posts the result back into the session.
  std::vector<std::thread> threads;
  mcp::ToolSpec spec;
  spec.name = "elsewhere";
  spec.input_schema = R"({"type":"object","required":["text"],"properties":{"text":{"type":"string"}}})";
  std::shared_ptr<mcp::ToolContext> held;
  spec.handler = [&](std::shared_ptr<mcp::ToolContext> call) {
    held = call;
    rapidjson::Document args;
    args.Parse(call->arguments().c_str());
    std::string text = args["text"].GetString();
    if (text == "hold") return;  // the test posts for it later
    threads.emplace_back([call, text] {
      call->post([call, text] { call->finish(mcp::ToolResult::text("from a thread: " + text)); });
    });
  };
  REQUIRE(f.tools.add(std::move(spec)).ok());
  f.add_namespace();
  const std::string s = "s-tool-post-000001";
  REQUIRE(f.initialize(s).status == 200);

  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"elsewhere","arguments":{"text":"hi"}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  REQUIRE(answer->has_value());
  auto& res = **answer;
  REQUIRE(res.stream);
  // Once the thread is done, its post is queued (or ran already, if it came while the
  // runtime was running): on virtual time posts run on the test's thread.
  for (auto& t : threads) t.join();
  f.runtime->run_until_idle();
  CHECK(read(res).over);
  auto ev = events(res);
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]) == "from a thread: hi");

  // A call cancelled before its post arrives: the post does nothing (no second answer,
  // no crash), and the session keeps serving.
  SessionCall held_call;
  held_call.kind = SessionCall::Kind::post;
  held_call.session_id = s;
  held_call.caller = f.alice;
  held_call.messages = messages(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"elsewhere","arguments":{"text":"hold"}}})");
  auto held_answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(held_call), held_answer);
  f.runtime->run_until_idle();
  REQUIRE(held);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}})").status == 202);
  CHECK(held->finished());
  bool ran = false;
  std::thread([&] { held->post([&] { ran = true; }); }).join();
  f.runtime->run_until_idle();
  CHECK_FALSE(ran);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"ping"})").status == 200);
  f.expected_active = 1;
}
