// The idle policy in the session (docs/architecture.md#idle-sessions), on virtual time: every
// client request stores last activity (and sets the idle alarm only if none is due by then);
// the alarm waits, extends
// for running work, or disposes; a disposed session answers from storage; the TTL
// deletes an abandoned session. The policy's table itself is tested in tests/mcp.
#include <doctest/doctest.h>

#include <set>

#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

constexpr std::int64_t kMinute = 60 * 1000;

struct IdleFixture : SessionFixture {
  std::string data_prefix(const std::string& session) {
    auto object = runtime->id_from_name(actors::kMcpSessionNamespace, session);
    return keys::object_prefix(object.ns(), object.body()) + keys::kObjectData;
  }
  std::optional<std::string> stored(const std::string& session, const std::string& key) {
    auto v = memory.get(data_prefix(session) + key);
    REQUIRE(v.ok());
    return *v;
  }
  HttpResponse ping(const std::string& session) {
    return post(session, R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  }
};

}  // namespace

TEST_CASE("idle: a request stores last activity and sets the idle alarm; an idle session leaves memory and answers from storage") {
  IdleFixture f;
  const std::string s = "s-idle-dispose-001";
  REQUIRE(f.initialize(s).status == 200);
  const auto t0 = f.clock.now_ms();
  CHECK(f.stored(s, "a") == std::to_string(t0));
  f.run_until(t0 + 3 * kMinute);
  REQUIRE(f.ping(s).status == 200);
  const auto t1 = f.clock.now_ms();
  CHECK(f.stored(s, "a") == std::to_string(t1));
  CHECK(f.runtime->active_objects() == 1);
  // The alarm set by the first request fires at t0 + 5 min and waits for the remainder.
  f.run_until(t1 + 5 * kMinute - 1);
  CHECK(f.runtime->active_objects() == 1);
  f.run_until(t1 + 5 * kMinute);
  CHECK(f.runtime->active_objects() == 0);
  // Storage stays: the next request activates it again, with no initialize.
  auto again = f.ping(s);
  CHECK(again.status == 200);
  CHECK(events(again).size() == 1);
  f.expected_active = 1;
}

TEST_CASE("idle: a request does not rewrite an idle alarm that is already due soon enough") {
  IdleFixture f;
  const std::string s = "s-idle-no-rewrite";
  REQUIRE(f.initialize(s).status == 200);
  // The idle alarm's index entries (keys end with the alarm's name; the retention alarm of
  // finished streams is another entry).
  auto alarms = [&] {
    auto entries = f.runtime->scan_index("dorm.alarms");
    REQUIRE(entries.ok());
    std::erase_if(*entries, [](const storage::KeyValue& kv) { return !kv.key.ends_with("idle"); });
    return *entries;
  };
  const auto after_initialize = alarms();
  REQUIRE(after_initialize.size() == 1);
  // Requests within the window store their activity but leave the alarm entry as it was
  // (same key, same version): re-arming per request is what made the index a hot spot.
  for (int i = 0; i < 5; ++i) {
    f.run_until(f.clock.now_ms() + 30 * 1000);
    REQUIRE(f.ping(s).status == 200);
  }
  const auto after_pings = alarms();
  REQUIRE(after_pings.size() == 1);
  CHECK(after_pings[0].key == after_initialize[0].key);
  CHECK(after_pings[0].value == after_initialize[0].value);
  CHECK(f.stored(s, "a") == std::to_string(f.clock.now_ms()));
  f.expected_active = 1;
}

TEST_CASE("idle: 100 requests over ten minutes write the idle alarm only when it fires, not per request") {
  IdleFixture f;
  const std::string s = "s-idle-100-requests";
  REQUIRE(f.initialize(s).status == 200);
  // Every set_alarm writes a new version, so each version seen after a request is one
  // write of the idle alarm; the alarm's own deliveries are its alarm spans.
  std::set<std::string> versions;
  auto note_version = [&] {
    auto entries = f.runtime->scan_index("dorm.alarms");
    REQUIRE(entries.ok());
    std::erase_if(*entries, [](const storage::KeyValue& kv) { return !kv.key.ends_with("idle"); });
    REQUIRE(entries->size() == 1);
    versions.insert((*entries)[0].value);
  };
  note_version();
  constexpr int kRequests = 100;
  for (int i = 0; i < kRequests; ++i) {
    f.run_until(f.clock.now_ms() + 6 * 1000);
    REQUIRE(f.ping(s).status == 200);
    note_version();
  }
  CHECK(f.runtime->active_objects() == 1);  // a request every 6 s: never idle for 5 minutes
  std::size_t idle_firings = 0;
  for (const auto& span : f.tracer.spans_named(trace::kAlarmSpan)) {
    if (std::get<std::string>(*span.attribute(trace::attr::kAlarmName)) == "idle") ++idle_firings;
  }
  // The alarm fired (at 5 and at 10 minutes) and, each time, found the latest activity and
  // re-armed itself for the remainder (the policy's first row): one write per firing, plus
  // initialize's. The 100 requests wrote none.
  CHECK(idle_firings >= 1);
  CHECK(idle_firings <= 2);  // ten minutes of activity, five-minute windows
  CHECK(versions.size() == idle_firings + 1);
  f.expected_active = 1;
}

TEST_CASE("idle: a session with a running call stays until 35 minutes idle, then is disposed; alarms are not activity") {
  IdleFixture f;
  const std::string s = "s-idle-busy-000001";
  REQUIRE(f.initialize(s).status == 200);
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3600000,"step_ms":600000}}})");
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  const auto t0 = f.clock.now_ms();
  const auto activity = f.stored(s, "a");
  f.run_until(t0 + 34 * kMinute);
  CHECK(f.runtime->active_objects() == 1);
  CHECK(f.stored(s, "a") == activity);  // the sleep's own turns are not client activity
  f.run_until(t0 + 35 * kMinute);
  CHECK(f.runtime->active_objects() == 0);
  // Its open connection went with it: the client resumes against the next activation.
  REQUIRE(answer->has_value());
  CHECK(read(**answer).over);
}

TEST_CASE("idle: a session idle for the TTL is deleted by its alarm") {
  IdleFixture f;
  f.options.session_ttl = std::chrono::hours(2);
  const std::string s = "s-idle-ttl-0000001";
  REQUIRE(f.initialize(s).status == 200);
  REQUIRE(f.post(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"kv_put","arguments":{"key":"k","value":"v"}}})").status == 200);
  const auto t0 = f.clock.now_ms();
  f.run_until(t0 + 10 * kMinute);
  CHECK(f.runtime->active_objects() == 0);
  CHECK(count_prefix(f.memory, f.data_prefix(s)) > 0);
  f.run_until(t0 + 2 * 60 * kMinute - 1);
  CHECK(count_prefix(f.memory, f.data_prefix(s)) > 0);
  f.run_until(t0 + 2 * 60 * kMinute);
  auto object = f.runtime->id_from_name(actors::kMcpSessionNamespace, s);
  CHECK(count_prefix(f.memory, keys::object_prefix(object.ns(), object.body())) == 0);
  // The deleted session left memory too: the alarm's activation does not stay.
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.ping(s).status == 404);
  CHECK(f.runtime->active_objects() == 0);
}
