// Code mode in the session object on virtual time, with a real engine pool: the engine's
// callbacks come back through the runtime's Inbox queue, which these tests deliver on
// their own thread. Pausing to storage, resuming by replay after crash(), the approval
// alarm, a resumption cut short by a crash, and the owner directory's expiry.
#include <doctest/doctest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>

#include "dorm/actors/code_mode.hpp"
#include "dorm/engine/pool.hpp"
#include "execution_owner.hpp"
#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

struct CodeFixture : SessionFixture {
  std::unique_ptr<engine::Pool> pool;
  actors::CodeModeOptions code;

  explicit CodeFixture(std::chrono::milliseconds warm = std::chrono::seconds(30))
      : SessionFixture(/*register_now=*/false) {
    engine::PoolOptions p;
    p.worker_path = DORM_ENGINE_WORKER;
    p.workers = 1;
    p.slots_per_worker = 4;  // two may be warm (half), two stay for new work
    auto created = engine::Pool::create(p);
    REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
    pool = std::move(created).value();
    code.pool = pool.get();
    code.warm_window = warm;
    REQUIRE(actors::enable_code_mode(tools, options, code).ok());
    add_namespace();
  }
  ~CodeFixture() { stop(); }

  void crash_and_start() {
    runtime->crash();
    start();
    add_namespace();
  }

  // Runs the runtime, delivering the engine's posts, until the response is complete
  // (bounded: 30 s of real time).
  HttpResponse finish(const std::shared_ptr<std::optional<HttpResponse>>& answer) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      runtime->run_until_idle();
      if (answer->has_value()) {
        auto& res = **answer;
        if (read(res).over) return res;
      }
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      runtime->wait_for_posts(std::chrono::milliseconds(100));
    }
  }

  // One tools/call, run to its result; returns the result object.
  rapidjson::Document tool(const std::string& session, const std::string& name, const std::string& args_json,
                           int id = 1) {
    SessionCall c;
    c.kind = SessionCall::Kind::post;
    c.session_id = session;
    c.caller = alice;
    c.messages = messages(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                          R"(,"method":"tools/call","params":{"name":")" + name + R"(","arguments":)" + args_json +
                          "}}");
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(std::move(c), answer);
    auto res = finish(answer);
    auto all = events(res);
    REQUIRE_FALSE(all.empty());
    rapidjson::Document out;
    REQUIRE(all.back().HasMember("result"));
    out.CopyFrom(all.back()["result"], out.GetAllocator());
    return out;
  }

  rapidjson::Document execute(const std::string& session, const std::string& code_text, int id = 1) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    w.Key("code");
    w.String(code_text.c_str());
    w.EndObject();
    return tool(session, "execute", buffer.GetString(), id);
  }

  rapidjson::Document resume(const std::string& session, const std::string& execution, const std::string& action,
                             int id = 1) {
    return tool(session, "resume", R"({"executionId":")" + execution + R"(","action":")" + action + R"("})", id);
  }
};

std::string compact_json(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  value.Accept(w);
  return buffer.GetString();
}

std::string status_of(const rapidjson::Document& result) { return result["structuredContent"]["status"].GetString(); }

// The counters as [counter, tally], read by code.
std::string counters(CodeFixture& f, const std::string& session, int id) {
  auto r = f.execute(session, R"(return [await tools.counter_get({}), await tools.counter_get({name: "tally"})])", id);
  REQUIRE(status_of(r) == "completed");
  return compact_json(r["structuredContent"]["result"]);
}

}  // namespace

TEST_CASE("code mode: a paused execution survives crash(); resume replays it and each tool ran once") {
  CodeFixture f;
  const std::string s = "s-code-crash-00001";
  REQUIRE(f.initialize(s).status == 200);
  auto paused = f.execute(s, "const n = await tools.tally({}); const c = await tools.counter_increment({}); return [n, c]");
  REQUIRE(status_of(paused) == "waiting_for_interaction");
  const std::string id = paused["structuredContent"]["executionId"].GetString();
  CHECK(std::string(paused["structuredContent"]["interaction"]["address"].GetString()) == "counter_increment");
  // Nothing ran past the pause.
  CHECK(counters(f, s, 2) == "[0,1]");

  f.crash_and_start();
  auto done = f.resume(s, id, "accept", 3);
  REQUIRE(status_of(done) == "completed");
  CHECK(compact_json(done["structuredContent"]["result"]) == "[1,1]");
  CHECK(counters(f, s, 4) == "[1,1]");
  // Settled: a second resume answers the same outcome and runs nothing.
  auto again = f.resume(s, id, "accept", 5);
  CHECK(compact_json(again["structuredContent"]["result"]) == "[1,1]");
  CHECK(counters(f, s, 6) == "[1,1]");
  f.expected_active = 1;
}

TEST_CASE("code mode: a decline rejects the paused call; the code catches it and the tool never runs") {
  // Warm (a resume within the window continues the same isolate) and cold (replayed).
  for (auto warm : {std::chrono::milliseconds(30'000), std::chrono::milliseconds(0)}) {
    CAPTURE(warm.count());
    CodeFixture f(warm);
    const std::string s = "s-code-decline-001";
    REQUIRE(f.initialize(s).status == 200);
    auto paused = f.execute(s, "const n = await tools.tally({}); try { await tools.counter_increment({}); return 'ran' } catch (e) { return n + ': ' + e.message }");
    REQUIRE(status_of(paused) == "waiting_for_interaction");
    const std::string id = paused["structuredContent"]["executionId"].GetString();
    auto done = f.resume(s, id, "decline", 2);
    REQUIRE(status_of(done) == "completed");
    CHECK(std::string(done["structuredContent"]["result"].GetString()) == "1: the user declined tools.counter_increment");
    // Either way the tool before the pause ran once. Warm, the paused execution itself
    // went on: nothing was cancelled (cold, it was cancelled at the pause and replayed).
    CHECK(counters(f, s, 3) == "[0,1]");
    if (warm.count() > 0) CHECK(f.pool->stats().failed == 0);
    f.expected_active = 1;
  }
}

TEST_CASE("code mode: the approval alarm declines with approval_timeout at the deadline; the directory forgets it") {
  CodeFixture f;
  const std::string s = "s-code-timeout-001";
  REQUIRE(f.initialize(s).status == 200);
  auto paused = f.execute(s, "try { await tools.counter_increment({}); return 'ran' } catch (e) { return e.message }");
  REQUIRE(status_of(paused) == "waiting_for_interaction");
  const std::string id = paused["structuredContent"]["executionId"].GetString();
  const std::int64_t ttl = paused["structuredContent"]["ttlMs"].GetInt64();
  CHECK(ttl == 240'000);
  const std::int64_t start = f.clock.now_ms();
  f.run_until(start + ttl - 1);
  // A resume one millisecond before the deadline would still be in time; the alarm has
  // not fired. (Not sent: it would accept.)
  f.run_until(start + ttl);
  // The alarm's continuation runs in the engine; a resume joins it or reads its outcome.
  auto done = f.resume(s, id, "accept", 2);
  REQUIRE(status_of(done) == "completed");
  CHECK(std::string(done["structuredContent"]["result"].GetString()) ==
        "the user declined tools.counter_increment (approval_timeout)");
  CHECK(counters(f, s, 3) == "[0,0]");
  // Settled, so the owner directory dropped the id: another session of the same user
  // finds no owner, and it answers execution_expired.
  const std::string other = "s-code-timeout-002";
  REQUIRE(f.initialize(other).status == 200);
  auto elsewhere = f.resume(other, id, "accept", 2);
  CHECK(elsewhere["isError"].GetBool());
  CHECK(status_of(elsewhere) == "execution_expired");
  f.expected_active = 2;
}

TEST_CASE("code mode: a resumption cut short by a crash settles as an error; the approved tool never runs twice") {
  CodeFixture f;
  const std::string s = "s-code-cut-000001";
  REQUIRE(f.initialize(s).status == 200);
  auto paused = f.execute(s, "await tools.counter_increment({}); await tools.ask({method: 'ping'}); return 'finished'");
  const std::string id = paused["structuredContent"]["executionId"].GetString();
  // Resume: the approved increment runs and commits, then the code waits for the client
  // (a ping it sends on the resume call's stream, never answered here).
  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"resume","arguments":{"executionId":")" +
                        id + R"(","action":"accept"}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  // Until the ping is on the stream: the increment before it has committed.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    f.runtime->run_until_idle();
    if (answer->has_value()) {
      read(**answer);
      if ((*answer)->body.find(R"("method":"ping")") != std::string::npos) break;
    }
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    f.runtime->wait_for_posts(std::chrono::milliseconds(100));
  }
  f.crash_and_start();
  // The reaper answered the killed resume call; a new resume cannot know what happened
  // after the approval, so it reports an error instead of running it again.
  auto after = f.resume(s, id, "accept", 3);
  REQUIRE(status_of(after) == "error");
  CHECK(std::string(after["structuredContent"]["error"].GetString()).find("interrupted") != std::string::npos);
  CHECK(counters(f, s, 4) == "[1,0]");
  auto repeat = f.resume(s, id, "accept", 5);
  CHECK(status_of(repeat) == "error");
  CHECK(counters(f, s, 6) == "[1,0]");
  f.expected_active = 1;
}

TEST_CASE("code mode: the owner directory answers until the deadline, then its alarm deletes the record") {
  CodeFixture f(std::chrono::milliseconds(0));
  auto directory = actors::owner_handle(*f.runtime, "exec_test");
  REQUIRE(directory.ok());
  const std::int64_t due = f.clock.now_ms() + 10'000;
  actors::OwnerRecord record{"exec_test", "some-session", f.alice, due, 10'000};
  Reply put;
  f.runtime->request(*directory, put.handler(), actors::OwnerPut{record});
  f.runtime->run_until_idle();
  REQUIRE(put.ok());
  auto get = [&](const std::string& id) {
    Reply r;
    f.runtime->request(*directory, r.handler(), actors::OwnerGet{id});
    f.runtime->run_until_idle();
    REQUIRE(r.ok());
    return r.value->get_as<std::string>(0);
  };
  auto stored = actors::OwnerRecord::from_json(get("exec_test"));
  REQUIRE(stored.has_value());
  CHECK(stored->session_object == "some-session");
  CHECK(stored->principal == f.alice);
  CHECK(get("exec_other").empty());  // a record answers only for its own id
  f.run_until(due - 1);
  CHECK_FALSE(get("exec_test").empty());
  f.run_until(due);
  // The alarm deleted it, and the object left memory with nothing stored.
  CHECK(get("exec_test").empty());
  CHECK(f.runtime->active_objects() == 0);
}

TEST_CASE("code mode: at most max_warm paused executions keep an engine slot; the rest go cold at once") {
  CodeFixture f;  // warm window 30 s, max_warm 2
  const std::string s = "s-code-warm-00001";
  REQUIRE(f.initialize(s).status == 200);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto paused = f.execute(s, "return await tools.counter_increment({})", 10 + i);
    REQUIRE(status_of(paused) == "waiting_for_interaction");
    ids.push_back(paused["structuredContent"]["executionId"].GetString());
  }
  CHECK(f.code.warm_now.load() == 2);
  // A warm one resumed leaves its place; the cold one resumes by replay all the same.
  CHECK(compact_json(f.resume(s, ids[0], "accept", 20)["structuredContent"]["result"]) == "1");
  CHECK(f.code.warm_now.load() == 1);
  CHECK(compact_json(f.resume(s, ids[2], "accept", 21)["structuredContent"]["result"]) == "2");
  // The window passes: the last warm one goes cold, and still resumes.
  f.run_until(f.clock.now_ms() + 30'000);
  CHECK(f.code.warm_now.load() == 0);
  CHECK(compact_json(f.resume(s, ids[1], "accept", 22)["structuredContent"]["result"]) == "3");
  f.expected_active = 1;
}
