// The restart reaper in the MCP session object, on virtual time: calls killed by a crash
// or by a reset of their session get the -32001 error on their streams at the next start
// (and a resume after it gets 204), one batch per record, so an injected commit failure
// leaves each record fully reaped or untouched; the restart_reap span and the dev switches.
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/event_id.hpp"
#include "dorm/mcp/reap_telemetry.hpp"
#include "dorm/runtime/keys.hpp"
#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::mcp::HttpResponse;
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

std::string sleep_call(std::string_view id, int ms) {
  return R"({"jsonrpc":"2.0","id":)" + std::string(id) +
         R"(,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":)" +
         std::to_string(ms) + "}}}";
}

// The JSON-RPC messages of an SSE body (the priming event's empty data left out).
std::vector<rapidjson::Document> events(const std::string& body) {
  std::vector<rapidjson::Document> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    auto end = body.find('\n', at);
    if (end != at + 6) {
      out.emplace_back();
      out.back().Parse(body.substr(at + 6, end - at - 6).c_str());
      REQUIRE_FALSE(out.back().HasParseError());
    }
    at = end;
  }
  return out;
}

// The ids of an SSE body's events, in order.
std::vector<mcp::EventId> event_ids(const std::string& body) {
  std::vector<mcp::EventId> out;
  std::size_t at = 0;
  while ((at = body.find("id: ", at)) != std::string::npos) {
    auto end = body.find('\n', at);
    auto id = mcp::parse_event_id(body.substr(at + 4, end - at - 4));
    REQUIRE(id);
    out.push_back(*id);
    at = end;
  }
  return out;
}

// Checks the reaper's error for request `id` (an integer).
void check_interrupted(const rapidjson::Document& doc, std::int64_t id, std::string_view reason,
                       std::uint64_t dead_generation) {
  REQUIRE(doc.IsObject());
  REQUIRE(doc.HasMember("error"));
  CHECK(doc["id"].GetInt64() == id);
  CHECK(doc["error"]["code"].GetInt() == -32001);
  std::string message = doc["error"]["message"].GetString();
  CHECK(message.find("outcome is unknown") != std::string::npos);
  CHECK(message.find("retry") == std::string::npos);
  const auto& data = doc["error"]["data"];
  CHECK(std::string(data["reason"].GetString()) == reason);
  CHECK(data["retrySafe"].IsFalse());
  CHECK(data["deadGeneration"].GetUint64() == dead_generation);
}

struct ReaperFixture : RuntimeFixture {
  actors::McpSessionOptions options;
  mcp::ToolRegistry tools;
  const mcp::Identity alice{"alice", "acme"};

  ReaperFixture() {
    REQUIRE(actors::register_fixtures(tools, "testing").ok());
    options.tools = &tools;
    add_namespace();
  }
  void add_namespace() { REQUIRE(actors::register_mcp_session(*runtime, options).ok()); }
  // The process dies: only committed batches survive, no hook runs.
  void crash_and_start() {
    runtime->crash();
    start();
    add_namespace();
  }

  void send(SessionCall c, std::shared_ptr<std::optional<HttpResponse>> answer) {
    auto handle = runtime->get(runtime->id_from_name(actors::kMcpSessionNamespace, c.session_id));
    REQUIRE(handle.ok());
    c.responder =
        std::make_shared<mcp::Responder>([answer](HttpResponse r) { *answer = std::move(r); });
    runtime->send(*handle, std::move(c));
  }
  HttpResponse call(SessionCall c) {
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(std::move(c), answer);
    runtime->run_until_idle();
    REQUIRE(answer->has_value());
    return **answer;
  }
  SessionCall make(SessionCall::Kind kind, const std::string& session) {
    SessionCall c;
    c.kind = kind;
    c.session_id = session;
    c.caller = alice;
    return c;
  }
  void initialize(const std::string& session, std::string_view version = "2025-11-25",
                  std::string_view capabilities = "{}") {
    auto c = make(SessionCall::Kind::initialize, session);
    c.messages =
        messages(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" +
                 std::string(version) + R"(","capabilities":)" + std::string(capabilities) + "}}");
    REQUIRE(call(std::move(c)).status == 200);
  }
  HttpResponse post(const std::string& session, std::string_view body) {
    auto c = make(SessionCall::Kind::post, session);
    c.messages = messages(body, &c.batch);
    return call(std::move(c));
  }
  // POSTs without waiting for the answer (a call that runs on).
  std::shared_ptr<std::optional<HttpResponse>> post_async(const std::string& session,
                                                          std::string_view body) {
    auto c = make(SessionCall::Kind::post, session);
    c.messages = messages(body, &c.batch);
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(std::move(c), answer);
    runtime->run_until_idle();
    return answer;
  }
  HttpResponse resume(const std::string& session, const mcp::EventId& cursor) {
    auto c = make(SessionCall::Kind::get, session);
    c.last_event_id = cursor.to_string();
    return call(std::move(c));
  }

  // ---- straight from storage ----
  std::string data_prefix(const std::string& session) {
    auto id = runtime->id_from_name(actors::kMcpSessionNamespace, session);
    return keys::object_prefix(id.ns(), id.body()) + keys::kObjectData;
  }
  std::vector<storage::KeyValue> rows(const std::string& prefix) {
    auto r = memory.scan(storage::ScanOptions::with_prefix(prefix));
    REQUIRE(r.ok());
    return *r;
  }
  // The session's streams, in id order.
  std::vector<std::uint64_t> streams(const std::string& session) {
    std::string prefix = data_prefix(session) + "l/";
    std::vector<std::uint64_t> out;
    for (const auto& kv : rows(prefix))
      out.push_back(*mcp::parse_fixed_hex(kv.key.substr(prefix.size())));
    return out;
  }
  // Every stored event of a stream (chunks joined), priming left out.
  std::vector<rapidjson::Document> stored(const std::string& session, std::uint64_t stream) {
    std::string prefix = data_prefix(session) + "e/" + mcp::stream_key(stream) + "/";
    std::map<std::string, std::string> by_seq;
    for (const auto& kv : rows(prefix)) by_seq[kv.key.substr(prefix.size(), 16)] += kv.value;
    std::string body;
    for (const auto& [seq, data] : by_seq) {
      if (!data.empty()) body += "data: " + data + "\n\n";
    }
    return events(body);
  }
  std::size_t journal_records(const std::string& session) {
    return rows(data_prefix(session) + "j/").size();
  }
  std::size_t inflight() {
    auto entries = runtime->scan_index(mcp::kInflightIndex);
    REQUIRE(entries.ok());
    return entries->size();
  }
};

const std::int64_t* int_attribute(const trace::SpanData& span, std::string_view key) {
  const auto* value = span.attribute(key);
  return value ? std::get_if<std::int64_t>(value) : nullptr;
}

// Moves what a streamed response sent so far into its body, as a client reading it would.
void drain(HttpResponse& r) {
  if (!r.stream) return;
  auto pending = r.stream->take();
  r.body += pending.bytes;
  r.stream->sent(pending.bytes.size());
  if (pending.end || pending.abort) r.stream->close();
}

}  // namespace

TEST_CASE(
    "reaper: a call killed by a crash is answered -32001 on resume; the next resume gets 204") {
  ReaperFixture f;
  const std::string s = "s-reap-one-0000001";
  f.initialize(s);
  auto pending = f.post_async(s, sleep_call("11", 30'000));
  // The response started (it streams): the head is there, the result is not.
  REQUIRE(pending->has_value());
  CHECK((*pending)->status == 200);
  CHECK((*pending)->stream);
  REQUIRE(f.journal_records(s) == 1);
  REQUIRE(f.inflight() == 1);
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 1);
  const mcp::EventId primed{streams[0], 0};
  const auto dead_generation = f.runtime->generation();

  f.crash_and_start();
  CHECK(f.tracer.spans_named(mcp::kRestartReapSpan).empty());  // nothing reaps before a start
  // The client resumes from the priming event, R after the drop.
  auto resumed = f.resume(s, primed);
  CHECK(resumed.status == 200);
  auto ev = events(resumed.body);
  REQUIRE(ev.size() == 1);
  check_interrupted(ev[0], 11, "server_restart", dead_generation);
  CHECK(f.journal_records(s) == 0);
  CHECK(f.inflight() == 0);

  // The SDK client reconnects once more after an error response: nothing follows, 204.
  auto ids = event_ids(resumed.body);
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] == mcp::EventId{streams[0], 1});
  CHECK(f.resume(s, ids[0]).status == 204);
  CHECK(f.resume(s, primed).status == 200);  // the error stays resumable

  // The span: an error, on purpose, with the count.
  auto spans = f.tracer.spans_named(mcp::kRestartReapSpan);
  REQUIRE(spans.size() == 1);
  const auto& span = spans[0];
  CHECK(span.status == trace::SpanStatus::error);
  const auto* exception = span.event("exception");
  REQUIRE(exception);
  std::map<std::string, std::string> fields;
  for (const auto& a : exception->attributes) {
    if (const auto* text = std::get_if<std::string>(&a.value)) fields[a.key] = *text;
  }
  CHECK(fields["exception.type"] == "dorm.ServerRestart");
  CHECK(fields["exception.message"].find("reaped 1 in-flight request(s) on 1 stream(s)") !=
        std::string::npos);
  CHECK(span.status_message == fields["exception.message"]);
  const auto session_id = f.runtime->id_from_name(actors::kMcpSessionNamespace, s).to_string();
  REQUIRE(span.attribute(mcp::reap_attr::kSession));
  CHECK(std::get<std::string>(*span.attribute(mcp::reap_attr::kSession)) == session_id);
  CHECK(*int_attribute(span, mcp::reap_attr::kStreams) == 1);
  CHECK(*int_attribute(span, mcp::reap_attr::kRequests) == 1);
  CHECK(*int_attribute(span, mcp::reap_attr::kDeadGeneration) ==
        static_cast<std::int64_t>(dead_generation));
  CHECK(std::get<std::string>(*span.attribute(mcp::reap_attr::kReason)) == "server_restart");
  // Under the activation it delayed.
  auto activations = f.tracer.spans_named(trace::kActivationSpan);
  REQUIRE_FALSE(activations.empty());
  REQUIRE(span.parent_span_id);
  CHECK(*span.parent_span_id == activations.back().context.span_id);

  // The reaped stream is finished, so the retention alarm removes it after 15 minutes.
  f.run_until(f.clock.now_ms() + 15 * 60 * 1000 + 1000);
  CHECK(f.streams(s).empty());
  CHECK(f.resume(s, primed).status == 400);
  f.expected_active = 1;
}

TEST_CASE("reaper: both calls of a 2025-03-26 batch get their errors on the batch's stream") {
  ReaperFixture f;
  const std::string s = "s-reap-batch-00001";
  f.initialize(s, "2025-03-26");
  f.post_async(s, "[" + sleep_call("1", 30'000) + "," + sleep_call("2", 30'000) + "]");
  REQUIRE(f.journal_records(s) == 2);
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 1);
  const auto dead_generation = f.runtime->generation();

  f.crash_and_start();
  // Any request activates the session; the reaper runs before it is handled.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"ping"})").status == 200);
  auto ev = f.stored(s, streams[0]);
  REQUIRE(ev.size() == 2);
  check_interrupted(ev[0], 1, "server_restart", dead_generation);
  check_interrupted(ev[1], 2, "server_restart", dead_generation);
  CHECK(f.journal_records(s) == 0);
  CHECK(f.inflight() == 0);
  // No priming for this revision, but the stream's second event can be resumed after.
  CHECK(f.resume(s, mcp::EventId{streams[0], 1}).status == 204);
  auto spans = f.tracer.spans_named(mcp::kRestartReapSpan);
  REQUIRE(spans.size() == 1);
  CHECK(*int_attribute(spans[0], mcp::reap_attr::kRequests) == 2);
  CHECK(*int_attribute(spans[0], mcp::reap_attr::kStreams) == 1);
  f.expected_active = 1;
}

TEST_CASE("reaper: calls on several streams of a session each get their error") {
  ReaperFixture f;
  const std::string s = "s-reap-streams-001";
  f.initialize(s);
  for (int i = 1; i <= 3; ++i) f.post_async(s, sleep_call(std::to_string(i * 10), 30'000));
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 3);
  f.crash_and_start();

  std::vector<std::int64_t> ids;
  for (auto stream : streams) {
    auto ev = events(f.resume(s, mcp::EventId{stream, 0}).body);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["error"]["code"].GetInt() == -32001);
    ids.push_back(ev[0]["id"].GetInt64());
  }
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::int64_t>{10, 20, 30});
  CHECK(f.inflight() == 0);
  auto spans = f.tracer.spans_named(mcp::kRestartReapSpan);
  REQUIRE(spans.size() == 1);
  CHECK(*int_attribute(spans[0], mcp::reap_attr::kRequests) == 3);
  CHECK(*int_attribute(spans[0], mcp::reap_attr::kStreams) == 3);
  f.expected_active = 1;
}

TEST_CASE("reaper: a completed call, a running call and a standalone stream are left alone") {
  ReaperFixture f;
  const std::string s = "s-reap-nothing-001";
  f.initialize(s);
  auto echo = f.post(
      s,
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})");
  auto echo_ids = event_ids(echo.body);
  REQUIRE(echo_ids.size() == 2);

  // A running call is never touched by its own activation: other traffic flows, and it
  // ends with its result.
  auto running = f.post_async(s, sleep_call("2", 1000));
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"ping"})").status == 200);
  f.run_until(f.clock.now_ms() + 1000);
  REQUIRE(running->has_value());
  drain(**running);
  auto result = events((*running)->body);
  REQUIRE(result.size() == 1);
  CHECK(result[0].HasMember("result"));

  // A standalone stream (it answers no request) with a journal record naming it, as if
  // left by a dead generation: not the reaper's to settle.
  std::string prefix = f.data_prefix(s);
  const std::uint64_t standalone = 0x5ca1ab1e00000001ULL;
  storage::WriteBatch planted;
  planted.put(
      prefix + "l/" + mcp::stream_key(standalone),
      R"({"request":"","retryMs":0,"finished":false,"finishedMs":0,"first":0,"next":0,"bytes":0,"events":0})");
  planted.put(prefix + "j/i:99", mcp::JournalRecord{mcp::RequestId(std::int64_t{99}), standalone,
                                                    Epoch{f.runtime->generation(), 1}}
                                     .to_json());
  REQUIRE(f.memory.commit(planted).ok());

  f.crash_and_start();
  CHECK(f.resume(s, echo_ids[1]).status == 204);
  CHECK(events(f.resume(s, echo_ids[0]).body).size() == 1);
  CHECK(f.tracer.spans_named(mcp::kRestartReapSpan).empty());  // nothing died unanswered
  CHECK(f.stored(s, standalone).empty());
  CHECK(f.journal_records(s) == 1);
  f.expected_active = 1;
}

TEST_CASE("reaper: a call whose session was reset in the same generation gets session_reset") {
  ReaperFixture f;
  const std::string s = "s-reap-reset-00001";
  f.initialize(s);
  auto pending = f.post_async(s, sleep_call("5", 1000));
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 1);
  // The turn that would store the result fails to commit: the session object resets,
  // its call dies with it, and its record stays.
  f.faulty.fail_commit(1);
  f.run_until(f.clock.now_ms() + 1000);
  REQUIRE(pending->has_value());
  CHECK((*pending)->status == 200);
  // Its open connection was cut with the activation.
  REQUIRE((*pending)->stream);
  CHECK((*pending)->stream->take().abort);
  CHECK(f.journal_records(s) == 1);
  CHECK(f.tracer.spans_named(trace::kResetSpan).size() == 1);

  // The client resumes: a fresh activation of the same generation reaps first.
  auto ev = events(f.resume(s, mcp::EventId{streams[0], 0}).body);
  REQUIRE(ev.size() == 1);
  check_interrupted(ev[0], 5, "session_reset", f.runtime->generation());
  CHECK(f.inflight() == 0);
  auto spans = f.tracer.spans_named(mcp::kRestartReapSpan);
  REQUIRE(spans.size() == 1);
  CHECK(std::get<std::string>(*spans[0].attribute(mcp::reap_attr::kReason)) == "session_reset");
  f.expected_active = 1;
}

TEST_CASE(
    "reaper: a commit that fails between records leaves each record reaped or untouched; the next "
    "start reaps the rest once") {
  for (bool applied : {false, true}) {
    CAPTURE(applied);
    ReaperFixture f;
    const std::string s = "s-reap-crash-00001";
    f.initialize(s);
    f.post_async(s, sleep_call("1", 30'000));
    f.post_async(s, sleep_call("2", 30'000));
    auto streams = f.streams(s);  // in id order: the order the reaper goes in
    REQUIRE(streams.size() == 2);
    f.crash_and_start();

    // The first record's batch commits; the second's fails (applied or not, the session
    // hears of a failure): on_start fails, the object resets, the GET gets 503.
    if (applied) {
      f.faulty.fail_commit_after_durable(2);
    } else {
      f.faulty.fail_commit(2);
    }
    CHECK(f.resume(s, mcp::EventId{streams[0], 0}).status == 503);
    CHECK(f.tracer.spans_named(trace::kResetSpan).size() == 1);
    CHECK(f.stored(s, streams[0]).size() == 1);
    CHECK(f.stored(s, streams[1]).size() == (applied ? 1u : 0u));
    CHECK(f.journal_records(s) == (applied ? 0u : 1u));
    CHECK(f.inflight() == (applied ? 0u : 1u));

    // And the process dies right there. The next start reaps what is left, once.
    f.crash_and_start();
    for (auto stream : streams) {
      auto ev = events(f.resume(s, mcp::EventId{stream, 0}).body);
      REQUIRE(ev.size() == 1);
      CHECK(ev[0]["error"]["code"].GetInt() == -32001);
      CHECK(f.stored(s, stream).size() == 1);
    }
    CHECK(f.journal_records(s) == 0);
    CHECK(f.inflight() == 0);
    auto spans = f.tracer.spans_named(mcp::kRestartReapSpan);
    // The failed start's span, then the next start's (none when nothing was left).
    REQUIRE(spans.size() == (applied ? 1u : 2u));
    CHECK(*int_attribute(spans[0], mcp::reap_attr::kRequests) == 1);
    CHECK(spans[0].event("exception"));
    if (!applied) CHECK(*int_attribute(spans[1], mcp::reap_attr::kRequests) == 1);
    f.expected_active = 1;
  }
}

TEST_CASE(
    "dev switches: without the reaper a killed call stays unanswered; without priming no priming "
    "event") {
  ReaperFixture f;
  f.options.reaper = false;
  f.options.priming = false;
  const std::string s = "s-dev-switches-001";
  f.initialize(s);
  auto ping = f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(ping.body.find("retry:") == std::string::npos);
  CHECK(event_ids(ping.body).size() == 1);

  f.post_async(s, sleep_call("2", 30'000));
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 2);
  f.crash_and_start();
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"ping"})").status == 200);
  CHECK(f.journal_records(s) == 1);
  CHECK(f.inflight() == 1);
  CHECK(f.tracer.spans_named(mcp::kRestartReapSpan).empty());
  f.expected_active = 1;
}

TEST_CASE(
    "reaper: a request id reused while its call runs is refused with -32600, so the running call "
    "keeps its journal record and is reaped after a crash") {
  ReaperFixture f;
  const std::string s = "s-reused-id-000001";
  f.initialize(s);
  auto longer = f.post_async(s, sleep_call("5", 30'000));
  REQUIRE(longer->has_value());
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 1);
  const mcp::EventId primed{streams[0], 0};
  REQUIRE(f.journal_records(s) == 1);

  // The same id for a shorter call, while the first runs: refused whole before it runs.
  // Had it run, its result would have deleted the first call's record on finishing.
  auto reused = f.post(s, sleep_call("5", 100));
  CHECK(reused.status == 400);
  rapidjson::Document error;
  error.Parse(reused.body.c_str());
  REQUIRE(error.IsObject());
  CHECK(error["id"].IsNull());  // never mistaken for the running call's answer
  CHECK(error["error"]["code"].GetInt() == -32600);
  CHECK(std::string(error["error"]["message"].GetString()).find("request id 5 is already in use") !=
        std::string::npos);
  CHECK(f.streams(s) == streams);  // nothing stored: no stream of its own
  f.run_until(f.clock.now_ms() + 1000);  // past the time the shorter call would have taken
  CHECK(f.journal_records(s) == 1);
  CHECK(f.inflight() == 1);

  // Ids of requests no longer in flight, and a string id equal in text, are fine.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":9,"method":"ping"})").status == 200);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":9,"method":"ping"})").status == 200);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":"5","method":"ping"})").status == 200);

  const auto dead_generation = f.runtime->generation();
  f.crash_and_start();
  auto resumed = f.resume(s, primed);
  CHECK(resumed.status == 200);
  auto ev = events(resumed.body);
  REQUIRE(ev.size() == 1);
  check_interrupted(ev[0], 5, "server_restart", dead_generation);
  CHECK(f.journal_records(s) == 0);
  CHECK(f.inflight() == 0);
  f.expected_active = 1;
}

TEST_CASE("reaper: one id twice in a 2025-03-26 batch is refused whole with -32600; nothing runs") {
  ReaperFixture f;
  const std::string s = "s-reused-batch-001";
  f.initialize(s, "2025-03-26");
  auto refused = f.post(s, "[" + sleep_call("7", 1000) +
                               R"(,{"jsonrpc":"2.0","method":"notifications/initialized"},)" +
                               sleep_call("7", 100) + "]");
  CHECK(refused.status == 400);
  CHECK(refused.body.find("-32600") != std::string::npos);
  CHECK(refused.body.find("request id 7 is already in use") != std::string::npos);
  CHECK(f.streams(s).empty());
  CHECK(f.journal_records(s) == 0);
  CHECK(f.inflight() == 0);
  // The same batch with distinct ids runs both calls.
  auto accepted = f.post_async(s, "[" + sleep_call("7", 1000) + "," + sleep_call("8", 100) + "]");
  f.run_until(f.clock.now_ms() + 1000);
  REQUIRE(accepted->has_value());
  drain(**accepted);
  auto ev = events((**accepted).body);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0]["id"].GetInt() == 8);
  CHECK(ev[1]["id"].GetInt() == 7);
  CHECK(f.journal_records(s) == 0);
  f.expected_active = 1;
}

TEST_CASE("reaper: a call waiting on the client's elicitation answer when the process dies is reaped; the late answer gets 202") {
  ReaperFixture f;
  const std::string s = "s-reap-elicit-0001";
  f.initialize(s, "2025-11-25", R"({"elicitation":{}})");
  auto pending = f.post_async(
      s, R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object"}}}}})");
  REQUIRE(pending->has_value());
  drain(**pending);
  auto sent = events((*pending)->body);
  REQUIRE(sent.size() == 1);
  const std::string asked = sent[0]["id"].GetString();
  REQUIRE(f.journal_records(s) == 1);
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 1);
  const auto dead_generation = f.runtime->generation();

  f.crash_and_start();
  // The client answers the elicitation after the restart: nothing waits for it any more.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + asked + R"(","result":{"action":"accept","content":{}}})").status == 202);
  // Its resume after the elicitation request finds the call's error.
  auto resumed = f.resume(s, mcp::EventId{streams[0], 1});
  CHECK(resumed.status == 200);
  auto ev = events(resumed.body);
  REQUIRE(ev.size() == 1);
  check_interrupted(ev[0], 5, "server_restart", dead_generation);
  CHECK(f.journal_records(s) == 0);
  f.expected_active = 1;
}

TEST_CASE("drain: running calls stop with -32001 server_draining on their live streams, which end; a restart reaps nothing") {
  ReaperFixture f;
  const std::string s = "s-drain-000000001";
  f.initialize(s);
  auto first = f.post_async(s, sleep_call("21", 30'000));
  auto second = f.post_async(s, sleep_call("22", 30'000));
  REQUIRE(first->has_value());
  REQUIRE(second->has_value());
  REQUIRE(f.inflight() == 2);
  const auto generation = f.runtime->generation();

  auto tell_drain = [&f, &s] {
    std::optional<std::uint64_t> stopped;
    auto handle = f.runtime->get(f.runtime->id_from_name(actors::kMcpSessionNamespace, s));
    REQUIRE(handle.ok());
    f.runtime->request(
        *handle,
        [&stopped](caf::expected<caf::message> r) {
          REQUIRE(r);
          REQUIRE(r->match_elements<std::uint64_t>());
          stopped = r->get_as<std::uint64_t>(0);
        },
        mcp::SessionDrain{});
    f.runtime->run_until_idle();
    REQUIRE(stopped);
    return *stopped;
  };
  CHECK(tell_drain() == 2);
  // Each live stream got its error and then its end, as a client reading it sees.
  std::int64_t id = 21;
  for (auto* pending : {first.get(), second.get()}) {
    auto& response = **pending;
    drain(response);
    auto ev = events(response.body);
    REQUIRE(ev.size() == 1);
    check_interrupted(ev[0], id++, "server_draining", generation);
    CHECK(response.stream->closed());
  }
  CHECK(f.inflight() == 0);
  CHECK(f.journal_records(s) == 0);
  CHECK(tell_drain() == 0);  // nothing left to stop

  // The stopped sleeps do no more work: their streams hold the error and nothing after it.
  f.run_until(f.clock.now_ms() + 60'000);
  auto streams = f.streams(s);
  REQUIRE(streams.size() == 2);
  for (auto stream : streams) CHECK(f.stored(s, stream).size() == 1);

  // The successor finds nothing to reap, and a resume replays the drain's error.
  f.crash_and_start();
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":3,"method":"ping"})").status == 200);
  CHECK(f.tracer.spans_named(mcp::kRestartReapSpan).empty());
  for (auto stream : streams) {
    auto ev = f.stored(s, stream);
    REQUIRE(ev.size() == 1);
    CHECK(std::string(ev[0]["error"]["data"]["reason"].GetString()) == "server_draining");
  }
  auto resumed = f.resume(s, mcp::EventId{streams[0], 0});
  CHECK(resumed.status == 200);
  CHECK(resumed.body.find("server_draining") != std::string::npos);
  f.expected_active = 1;
}
