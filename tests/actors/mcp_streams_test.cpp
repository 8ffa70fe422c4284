// Live SSE streams of an MCP session, on virtual time: sinks, keep-alive, slow readers,
// connections replacing each other, the standalone GET stream, cancellation, server-
// initiated closes (SSE polling). Every test reads streams the way a client would
// (session_fixture.hpp's read()) and checks what it would have seen.
#include <doctest/doctest.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <set>
#include <string>

#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

struct StreamFixture : SessionFixture {
  SessionCall post_call(const std::string& session, std::string_view body) {
    SessionCall c;
    c.kind = SessionCall::Kind::post;
    c.session_id = session;
    c.caller = alice;
    c.messages = messages(body);
    return c;
  }
  // Starts a call whose response streams; returns the response (head and what is sent).
  std::shared_ptr<std::optional<HttpResponse>> start(const std::string& session, std::string_view body) {
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(post_call(session, body), answer);
    runtime->run_until_idle();
    REQUIRE(answer->has_value());
    return answer;
  }
  std::shared_ptr<std::optional<HttpResponse>> get(const std::string& session,
                                                   std::optional<std::string> last_event_id = std::nullopt) {
    SessionCall c;
    c.kind = SessionCall::Kind::get;
    c.session_id = session;
    c.caller = alice;
    c.last_event_id = std::move(last_event_id);
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(std::move(c), answer);
    runtime->run_until_idle();
    REQUIRE(answer->has_value());
    return answer;
  }
  std::string journal_prefix(const std::string& session) {
    auto object = runtime->id_from_name(actors::kMcpSessionNamespace, session);
    return keys::object_prefix(object.ns(), object.body()) + keys::kObjectData + "j/";
  }
};

// Every event id of an SSE body, in order (the priming event's included).
std::vector<std::string> ids(const HttpResponse& r) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = r.body.find("id: ", at)) != std::string::npos) {
    auto end = r.body.find('\n', at);
    out.push_back(r.body.substr(at + 4, end - at - 4));
    at = end;
  }
  return out;
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("streams: a quiet open stream gets a keep-alive comment every 15 s") {
  StreamFixture f;
  const std::string s = "s-keepalive-00001";
  REQUIRE(f.initialize(s).status == 200);
  auto answer = f.start(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":40000,"step_ms":40000}}})");
  auto& res = **answer;
  const auto t0 = f.clock.now_ms();
  f.run_until(t0 + 14'999);
  read(res);
  CHECK(count(res.body, mcp::kKeepAliveComment) == 0);
  f.run_until(t0 + 15'000);
  read(res);
  CHECK(count(res.body, mcp::kKeepAliveComment) == 1);
  f.run_until(t0 + 30'000);
  read(res);
  CHECK(count(res.body, mcp::kKeepAliveComment) == 2);
  f.run_until(t0 + 40'000);
  CHECK(read(res).over);
  CHECK(text_of(events(res).back()) == "slept 40000 ms");
  f.expected_active = 1;
}

TEST_CASE("streams: a reader over 1 MiB behind is cut off; a resume delivers every event exactly once") {
  StreamFixture f;
  const std::string s = "s-slow-reader-0001";
  REQUIRE(f.initialize(s).status == 200);
  // 2 MiB of progress (64 notifications of 32 KiB), 10 ms apart, while the client reads
  // nothing after the priming event.
  auto answer = f.start(s, R"({"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"flood","arguments":{"count":64,"bytes":32768,"interval_ms":10},"_meta":{"progressToken":"p"}}})");
  auto& res = **answer;
  read(res);
  // What the POST's own turn wrote: the priming event and the first progress.
  auto seen = ids(res);
  REQUIRE(seen.size() == 2);
  // 10 ms apart, about 33 notifications pass 1 MiB: by 450 ms the reader is cut off.
  f.run_until(f.clock.now_ms() + 450);
  // It read nothing more; the unsent bytes passed 1 MiB and the connection was cut.
  auto pending = res.stream->take();
  CHECK(pending.abort);
  res.stream->close();
  CHECK(res.stream->unsent() == 0);
  // Every event is in the log: a resume from the last id the client saw, while the tool
  // still runs, replays the rest (over 1 MiB at once: not a slow reader) and goes on live,
  // so the client has each event exactly once.
  auto resumed = f.get(s, seen.back());
  auto& r = **resumed;
  auto during = read(r);
  CHECK_FALSE(during.over);
  CHECK(r.body.size() > 1024 * 1024);
  f.run_until(f.clock.now_ms() + 1000);
  auto after = read(r);
  CHECK(after.over);
  CHECK_FALSE(after.aborted);
  auto ev = events(res);
  for (auto& e : events(r)) ev.push_back(std::move(e));
  REQUIRE(ev.size() == 65);
  for (int i = 0; i < 64; ++i) CHECK(ev[i]["params"]["progress"].GetDouble() == i + 1);
  CHECK(text_of(ev[64]) == "sent 64 progress notifications");
  auto all = ids(r);
  CHECK(std::set<std::string>(all.begin(), all.end()).size() == all.size());
  f.expected_active = 1;
}

TEST_CASE("streams: a client that goes away changes nothing; its resume continues live") {
  StreamFixture f;
  const std::string s = "s-client-gone-0001";
  REQUIRE(f.initialize(s).status == 200);
  auto answer = f.start(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000},"_meta":{"progressToken":"t"}}})");
  auto& res = **answer;
  f.run_until(f.clock.now_ms() + 1000);
  read(res);
  auto seen = ids(res);
  REQUIRE(seen.size() == 2);  // priming, progress 1000
  res.stream->close();        // the connection drops
  f.run_until(f.clock.now_ms() + 1000);  // progress 2000 goes to the log only
  auto resumed = f.get(s, seen.back());
  auto& r = **resumed;
  CHECK_FALSE(read(r).over);
  REQUIRE(events(r).size() == 1);
  CHECK(events(r)[0]["params"]["progress"].GetDouble() == 2000);
  f.run_until(f.clock.now_ms() + 1000);
  CHECK(read(r).over);
  auto ev = events(r);
  REQUIRE(ev.size() == 3);
  CHECK(text_of(ev[2]) == "slept 3000 ms");
  f.expected_active = 1;
}

TEST_CASE("streams: a resume with nothing to replay carries its cursor as a priming event, so a second drop resumes too") {
  // Found by dorm torture (seed 1, cycle 1): a resumed connection that broke before the
  // stream's next event gave the SDK client no id to resume from, and its call hung.
  StreamFixture f;
  const std::string s = "s-resume-twice-001";
  REQUIRE(f.initialize(s).status == 200);
  auto answer = f.start(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000}}})");
  auto& res = **answer;
  read(res);
  auto primed = ids(res);
  REQUIRE(primed.size() == 1);  // the priming event; no progress was asked for
  res.stream->close();          // the first drop
  f.run_until(f.clock.now_ms() + 1000);

  auto resumed = f.get(s, primed.back());
  auto& r = **resumed;
  CHECK_FALSE(read(r).over);
  CHECK(events(r).empty());
  CHECK(ids(r) == primed);  // the client has an id again, before any new event
  CHECK(r.body.find("retry: ") != std::string::npos);
  r.stream->close();  // the second drop, before the stream's next event
  f.run_until(f.clock.now_ms() + 2000);

  // The client resumes from the id the resumed connection carried: the result, once.
  auto again = f.get(s, ids(r).back());
  read(**again);
  auto ev = events(**again);
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]) == "slept 3000 ms");
  f.expected_active = 1;
}

TEST_CASE("standalone GET: notifications wait in its log, arrive when a GET opens, live afterwards; a newer GET replaces the older") {
  StreamFixture f;
  const std::string s = "s-standalone-00001";
  REQUIRE(f.initialize(s).status == 200);
  // Before any GET: stored.
  CHECK(events(f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"announce","arguments":{"text":"first"}}})")).size() == 1);
  auto g1 = f.get(s);
  auto& first = **g1;
  CHECK(first.status == 200);
  CHECK(header(first, "Content-Type") == "text/event-stream");
  CHECK_FALSE(read(first).over);
  auto ev = events(first);
  REQUIRE(ev.size() == 1);
  CHECK(std::string(ev[0]["method"].GetString()) == "notifications/message");
  CHECK(std::string(ev[0]["params"]["data"].GetString()) == "first");
  CHECK(first.body.rfind("id: ", 0) == 0);
  CHECK(first.body.find("retry: 500") != std::string::npos);

  // Live on the open GET; never on the POST that caused it.
  auto post = f.post(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"announce","arguments":{"text":"second"}}})");
  CHECK(events(post).size() == 1);
  CHECK(text_of(events(post)[0]) == "announced");
  read(first);
  REQUIRE(events(first).size() == 2);
  CHECK(std::string(events(first)[1]["params"]["data"].GetString()) == "second");
  for (const auto& e : events(first)) CHECK_FALSE(e.HasMember("result"));

  // A newer GET replaces it: the old one ends cleanly, the new one starts after what the
  // old one carried.
  auto g2 = f.get(s);
  auto old_state = read(first);
  CHECK(old_state.over);
  CHECK_FALSE(old_state.aborted);
  CHECK_FALSE(read(**g2).over);
  CHECK(events(**g2).empty());
  f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"announce","arguments":{"text":"third"}}})");
  read(**g2);
  REQUIRE(events(**g2).size() == 1);
  CHECK(std::string(events(**g2)[0]["params"]["data"].GetString()) == "third");
  CHECK(events(first).size() == 2);

  // The replaced client may resume from its last id and gets what it missed.
  auto last_first = ids(first).back();
  auto resumed = f.get(s, last_first);
  read(**resumed);
  REQUIRE(events(**resumed).size() == 1);
  CHECK(std::string(events(**resumed)[0]["params"]["data"].GetString()) == "third");

  // DELETE ends every open stream.
  CHECK(f.simple(SessionCall::Kind::remove, s).status == 200);
  CHECK(read(**resumed).over);
  f.expected_active = 0;  // a deleted session leaves memory
}

TEST_CASE("cancellation: the work stops, no response is sent, the stream ends, the journal record goes with it") {
  StreamFixture f;
  const std::string s = "s-cancel-00000001";
  REQUIRE(f.initialize(s).status == 200);
  auto answer = f.start(s, R"({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":5000},"_meta":{"progressToken":"t"}}})");
  auto& res = **answer;
  f.run_until(f.clock.now_ms() + 1000);
  CHECK(count_prefix(f.memory, f.journal_prefix(s)) == 1);
  CHECK(f.runtime->scan_index("mcp.inflight")->size() == 1);
  // Unknown and malformed cancellations are ignored.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}})").status == 202);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})").status == 202);
  CHECK(count_prefix(f.memory, f.journal_prefix(s)) == 1);
  auto cancelled = f.post(s, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user"}})");
  CHECK(cancelled.status == 202);
  auto state = read(res);
  CHECK(state.over);
  CHECK_FALSE(state.aborted);
  CHECK(count_prefix(f.memory, f.journal_prefix(s)) == 0);
  CHECK(f.runtime->scan_index("mcp.inflight")->empty());
  // The sleep does no more work: no more progress, no result, now or later.
  f.run_until(f.clock.now_ms() + 10'000);
  auto ev = events(res);
  REQUIRE(ev.size() == 1);
  CHECK(std::string(ev[0]["method"].GetString()) == "notifications/progress");
  auto last = ids(res).back();
  auto resumed = f.get(s, last);
  CHECK((**resumed).status == 204);  // the stream ended: nothing more will come
  f.expected_active = 1;
}

TEST_CASE("SSE polling: test_reconnection closes its connection after the priming event; the result comes on the resume") {
  StreamFixture f;
  REQUIRE(actors::register_fixtures(f.tools, "conformance").ok());
  const std::string s = "s-polling-0000001";
  REQUIRE(f.initialize(s).status == 200);
  auto answer = f.start(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}})");
  auto& res = **answer;
  CHECK(res.status == 200);
  // A complete response holding only the priming event (id and retry hint).
  CHECK(read(res).over);
  CHECK(events(res).empty());
  auto primed = ids(res);
  REQUIRE(primed.size() == 1);
  CHECK(res.body.find("retry: 500") != std::string::npos);
  f.run_until(f.clock.now_ms() + 500);
  auto resumed = f.get(s, primed[0]);
  read(**resumed);
  auto ev = events(**resumed);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0]["id"].GetInt() == 1);
  CHECK(text_of(ev[0]) == "Reconnection test completed successfully");
  CHECK((**f.get(s, ids(**resumed).back())).status == 204);

  // A session without priming (2025-06-18) cannot resume: its stream is never closed early.
  const std::string old = "s-polling-old-0001";
  REQUIRE(f.initialize(old, "2025-06-18").status == 200);
  auto whole = f.start(old, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}})");
  f.run_until(f.clock.now_ms() + 100);
  CHECK(read(**whole).over);
  REQUIRE(events(**whole).size() == 1);
  f.expected_active = 2;
}

TEST_CASE("streams: two concurrent calls and the standalone GET never carry the same message twice") {
  StreamFixture f;
  const std::string s = "s-no-dupes-000001";
  REQUIRE(f.initialize(s).status == 200);
  auto g = f.get(s);
  auto a = f.start(s, R"({"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000,"step_ms":500},"_meta":{"progressToken":"a"}}})");
  auto b = f.start(s, R"({"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"sleep","arguments":{"ms":2000,"step_ms":250},"_meta":{"progressToken":"b"}}})");
  f.run_until(f.clock.now_ms() + 700);
  f.post(s, R"({"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"announce","arguments":{"text":"x"}}})");
  // b's client drops and resumes mid-way.
  read(**b);
  (**b).stream->close();
  f.run_until(f.clock.now_ms() + 300);
  auto b2 = f.get(s, ids(**b).back());
  f.run_until(f.clock.now_ms() + 3000);
  for (auto* r : {&**g, &**a, &**b2}) read(*r);
  std::multiset<std::string> messages_seen;
  std::set<std::string> ids_seen;
  for (auto* r : {&**g, &**a, &**b, &**b2}) {
    for (const auto& e : events(*r)) {
      rapidjson::StringBuffer buffer;
      rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
      e.Accept(w);
      messages_seen.insert(buffer.GetString());
    }
  }
  for (const auto& m : messages_seen) CHECK(messages_seen.count(m) == 1);
  // a: 6 progress + result; b: 8 progress + result; the GET: the announcement.
  CHECK(messages_seen.size() == 6 + 1 + 8 + 1 + 1);
  CHECK(events(**g).size() == 1);
  f.expected_active = 1;
}
