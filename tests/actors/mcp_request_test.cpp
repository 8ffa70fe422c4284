// Requests of MCP 2026-07-28 served by their own durable objects, on virtual time: a
// tools/call answered and gone, input_required rounds whose state is a one-use durable
// record (it survives a restart; a replayed, foreign, tampered, expired or mismatched
// state resumes nothing), -32021 for a capability the request did not declare, and
// prompts/get asking too.
#include <doctest/doctest.h>

#include "request_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

const char* kStep1 = R"({"step1":{"action":"accept","content":{"name":"Ada"}}})";
const char* kStep2 = R"({"step2":{"action":"accept","content":{"color":"green"}}})";

std::string multi_round(std::string_view answers = {}) {
  std::string p = R"({"name":"test_input_required_result_multi_round","arguments":{})";
  if (!answers.empty()) p += R"(,"inputResponses":)" + std::string(answers);
  return p + "}";
}

}  // namespace

TEST_CASE("mcp request: a tools/call is answered with the modern envelope and leaves nothing behind") {
  RequestFixture f;
  std::size_t before = f.stored();
  auto r = f.send("tools/call", R"({"name":"echo","arguments":{"text":"hi"}})");
  CHECK(r.status == 200);
  CHECK(header(r, "Content-Type") == "application/json");
  auto m = RequestFixture::message(r);
  CHECK(std::string(m["result"]["content"][0]["text"].GetString()) == "hi");
  CHECK(std::string(m["result"]["resultType"].GetString()) == "complete");
  CHECK(std::string(m["result"]["_meta"][mcp::kMetaServerInfo]["name"].GetString()) == "dorm-test");
  CHECK(f.stored() == before);
  CHECK(f.runtime->active_objects() == 0);
}

TEST_CASE("mcp request: rounds of questions; each state is good once, and a new one comes with each round") {
  RequestFixture f;
  std::size_t before = f.stored();
  auto r1 = RequestFixture::message(f.send("tools/call", multi_round()));
  CHECK(r1["result"]["inputRequests"].HasMember("step1"));
  std::string s1 = state_of(r1);
  CHECK(f.stored() > before);  // the record, and its alarm
  auto r2 = RequestFixture::message(f.send("tools/call", multi_round(kStep1), kAll, s1));
  CHECK(r2["result"]["inputRequests"].HasMember("step2"));
  CHECK_FALSE(r2["result"]["inputRequests"].HasMember("step1"));
  std::string s2 = state_of(r2);
  CHECK(s2 != s1);

  // The first state was used: sent again, it resumes nothing.
  auto replay = f.send("tools/call", multi_round(kStep1), kAll, s1);
  CHECK(replay.status == 400);
  CHECK(RequestFixture::message(replay)["error"]["code"].GetInt() == mcp::kInvalidParams);

  // step1's answer comes from the record; only step2's is sent.
  auto done = RequestFixture::message(f.send("tools/call", multi_round(kStep2), kAll, s2));
  REQUIRE(done.HasMember("result"));
  CHECK(std::string(done["result"]["content"][0]["text"].GetString()) == "name \"Ada\", color \"green\"");
  CHECK(f.stored() == before);
  CHECK(f.send("tools/call", multi_round(kStep2), kAll, s2).status == 400);
}

TEST_CASE("mcp request: a state issued before a restart resumes after it, exactly once") {
  RequestFixture f;
  std::string s1 = state_of(RequestFixture::message(f.send("tools/call", multi_round())));
  f.restart();
  auto r2 = RequestFixture::message(f.send("tools/call", multi_round(kStep1), kAll, s1));
  CHECK(r2["result"]["inputRequests"].HasMember("step2"));
  f.restart();
  CHECK(f.send("tools/call", multi_round(kStep1), kAll, s1).status == 400);
}

TEST_CASE("mcp request: a foreign, tampered or mismatched state is refused and the record stays for its owner") {
  RequestFixture f;
  std::string s1 = state_of(RequestFixture::message(f.send("tools/call", multi_round())));
  // Sealed for alice: another principal's request, or a state with a byte changed (the
  // MAC, the handle or the round), does not open, so it reaches no object.
  CHECK(f.opens(s1, f.alice));
  CHECK_FALSE(f.opens(s1, {"bob", "acme"}));
  CHECK_FALSE(f.opens(s1, {"alice", "other"}));
  for (std::size_t at : {0ul, 20ul, 27ul, 40ul, 47ul}) {
    std::string tampered = s1;
    tampered[at] = tampered[at] == 'A' ? 'B' : 'A';
    CHECK_FALSE(f.opens(tampered, f.alice));
  }
  // Another round of the same object, sealed with the key (as a state from an earlier
  // round would be): the object's record knows the open round.
  auto opened = mcp::open_request_state(s1, f.alice, f.state_key());
  REQUIRE(opened);
  opened->round += 1;
  CHECK(f.send("tools/call", multi_round(kStep1), kAll, mcp::seal_request_state(*opened, f.alice, f.state_key())).status == 400);
  // The same state for other params.
  auto other = f.send("tools/call", R"({"name":"test_input_required_result_multi_round","arguments":{"x":1}})", kAll, s1);
  CHECK(other.status == 400);
  CHECK(std::string(RequestFixture::message(other)["error"]["message"].GetString()).find("another request") !=
        std::string::npos);
  // An answer of the wrong shape is refused before the state is used.
  CHECK(f.send("tools/call", multi_round(R"({"step1":12345})"), kAll, s1).status == 400);
  // After all that, its owner's retry works.
  auto ok = RequestFixture::message(f.send("tools/call", multi_round(kStep1), kAll, s1));
  CHECK(ok["result"]["inputRequests"].HasMember("step2"));
}

TEST_CASE("mcp request: an unused state expires with its alarm, and then resumes nothing") {
  RequestFixture f;
  std::size_t before = f.stored();
  std::string s1 = state_of(RequestFixture::message(f.send("tools/call", multi_round())));
  f.run_until(f.clock.now_ms() + 5 * 60 * 1000 + 1000);
  CHECK(f.stored() == before);
  CHECK(f.send("tools/call", multi_round(kStep1), kAll, s1).status == 400);
}

TEST_CASE("mcp request: a capability the request did not declare is -32021; answers of the wrong shape -32602") {
  RequestFixture f;
  auto r = f.send("tools/call", R"({"name":"test_missing_capability","arguments":{}})", "{}");
  CHECK(r.status == 400);
  auto m = RequestFixture::message(r);
  CHECK(m["error"]["code"].GetInt() == mcp::kMissingRequiredClientCapability);
  CHECK(m["error"]["data"]["requiredCapabilities"]["sampling"].IsObject());

  // Declared sampling only: the tool asks by sampling instead of a form.
  auto only_sampling = RequestFixture::message(
      f.send("tools/call", R"({"name":"test_input_required_result_capabilities","arguments":{}})", R"({"sampling":{}})"));
  const auto& asked = only_sampling["result"]["inputRequests"];
  REQUIRE(asked.MemberCount() == 1);
  CHECK(std::string(asked.MemberBegin()->value["method"].GetString()) == "sampling/createMessage");

  // Answers without a state are used as they are, and checked when asked for.
  auto bad = f.send("tools/call",
                    R"({"name":"test_input_required_result_elicitation","arguments":{},"inputResponses":{"user_name":12345}})");
  CHECK(bad.status == 400);
  auto null_answers = f.send("tools/call",
                             R"({"name":"test_input_required_result_elicitation","arguments":{},"inputResponses":null})");
  CHECK(null_answers.status == 400);
  auto good = RequestFixture::message(f.send(
      "tools/call",
      R"({"name":"test_input_required_result_elicitation","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}},"extra":{"x":1}}})"));
  CHECK(std::string(good["result"]["content"][0]["text"].GetString()) == "Hello, \"Ada\"!");
  CHECK(f.runtime->active_objects() == 0);
}

TEST_CASE("mcp request: prompts/get asks too, and fills the prompt in with the answer") {
  RequestFixture f;
  auto r1 = RequestFixture::message(f.send("prompts/get", R"({"name":"test_input_required_result_prompt"})"));
  CHECK(r1["result"]["inputRequests"].HasMember("user_context"));
  std::string s1 = state_of(r1);
  auto r2 = RequestFixture::message(f.send(
      "prompts/get",
      R"({"name":"test_input_required_result_prompt","inputResponses":{"user_context":{"action":"accept","content":{"context":"tests"}}}})",
      kAll, s1));
  REQUIRE(r2.HasMember("result"));
  CHECK(std::string(r2["result"]["resultType"].GetString()) == "complete");
  CHECK(std::string(r2["result"]["messages"][0]["content"]["text"].GetString()).find("tests") != std::string::npos);
}

TEST_CASE("mcp request: a slow tool streams its progress, then its result") {
  RequestFixture f;
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  // Sent by hand: the clock must move while the call runs.
  auto body = mcp::parse_body(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":300,"step_ms":100},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})");
  auto checked = mcp::check_modern(mcp::ModernHeaders{"2026-07-28", "tools/call", "sleep"},
                                   std::get<mcp::ParsedBody>(std::move(body)));
  mcp::ModernCall call;
  call.request = std::get<mcp::ModernRequest>(std::move(checked));
  call.caller = f.alice;
  call.handle = *mcp::new_session_id();
  call.responder = std::make_shared<mcp::Responder>([answer](HttpResponse r) { *answer = std::move(r); });
  f.runtime->send(f.handle(actors::kMcpRequestNamespace, call.handle), std::move(call));
  f.runtime->run_until_idle();
  CHECK_FALSE(answer->has_value());  // nothing to say yet: no head sent
  f.run_until(f.clock.now_ms() + 100);
  REQUIRE(answer->has_value());  // the first progress opened the stream
  HttpResponse r = std::move(**answer);
  CHECK(header(r, "Content-Type") == mcp::kEventStream);
  f.run_until(f.clock.now_ms() + 250);
  for (int i = 0; i < 10 && !read(r).over; ++i) f.runtime->run_until_idle();
  auto all = events(r);
  REQUIRE(all.size() == 4);
  CHECK(std::string(all[0]["method"].GetString()) == "notifications/progress");
  CHECK(std::string(all[3]["result"]["resultType"].GetString()) == "complete");
}

namespace {

constexpr const char* kTasks = R"({"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}})";

struct TaskFixture : RequestFixture {
  // tasks/get|update|cancel of `task` with `extra` params members (",..." or "").
  rapidjson::Document task_op(std::string_view method, const std::string& task, std::string extra = {},
                              mcp::Identity who = {"alice", "acme"}) {
    return message(send(method, R"({"taskId":")" + task + "\"" + extra + "}", kTasks, {}, std::move(who), task));
  }
  std::string status(const std::string& task) {
    auto got = task_op("tasks/get", task);
    REQUIRE(got.HasMember("result"));
    return got["result"]["status"].GetString();
  }
  // A tools/call that must become a task: its id.
  std::string create(const std::string& params) {
    auto created = message(send("tools/call", params, kTasks));
    REQUIRE(created.HasMember("result"));
    REQUIRE(std::string(created["result"]["resultType"].GetString()) == "task");
    CHECK(std::string(created["result"]["status"].GetString()) == "working");
    CHECK_FALSE(created["result"].HasMember("requestState"));
    return created["result"]["taskId"].GetString();
  }
};

}  // namespace

TEST_CASE("mcp request: a task runs as its object's turns; tasks/get sees it work, then its result") {
  TaskFixture f;
  std::size_t before = f.stored();
  std::string id = f.create(R"({"name":"slow_compute","arguments":{"seconds":2,"label":"pi"}})");
  CHECK(f.status(id) == "working");
  f.run_until(f.clock.now_ms() + 2000);
  auto done = f.task_op("tasks/get", id);
  CHECK(std::string(done["result"]["status"].GetString()) == "completed");
  CHECK(std::string(done["result"]["resultType"].GetString()) == "complete");
  CHECK(std::string(done["result"]["result"]["content"][0]["text"].GetString()) == "computed pi in 2 s");
  // Another principal learns nothing of it; an id that names nothing is unknown too.
  CHECK(f.task_op("tasks/get", id, {}, {"bob", "acme"})["error"]["code"].GetInt() == mcp::kInvalidParams);
  CHECK(f.task_op("tasks/get", std::string(32, 'a'))["error"]["code"].GetInt() == mcp::kInvalidParams);
  // Cancelling a finished task is acknowledged and changes nothing.
  CHECK(std::string(f.task_op("tasks/cancel", id)["result"]["resultType"].GetString()) == "complete");
  CHECK(f.status(id) == "completed");
  // The record lives until its TTL, then goes with everything else.
  f.run_until(f.clock.now_ms() + 60 * 60 * 1000);
  CHECK(f.stored() == before);
  CHECK(f.task_op("tasks/get", id)["error"]["code"].GetInt() == mcp::kInvalidParams);
}

TEST_CASE("mcp request: a task stops for input; tasks/update answers part, then the rest, and it runs again") {
  TaskFixture f;
  std::string id = f.create(R"({"name":"multi_input","arguments":{}})");
  f.run_until(f.clock.now_ms() + 50);
  auto waiting = f.task_op("tasks/get", id);
  CHECK(std::string(waiting["result"]["status"].GetString()) == "input_required");
  CHECK(waiting["result"]["inputRequests"].MemberCount() == 2);
  // One answer, and one for a question nobody asked: acknowledged; one question is left.
  f.task_op("tasks/update", id, R"(,"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}},"nope":{"x":1}})");
  auto partly = f.task_op("tasks/get", id);
  CHECK(std::string(partly["result"]["status"].GetString()) == "input_required");
  CHECK(partly["result"]["inputRequests"].HasMember("confirm"));
  CHECK_FALSE(partly["result"]["inputRequests"].HasMember("name"));
  f.task_op("tasks/update", id, R"(,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}})");
  f.run_until(f.clock.now_ms() + 50);
  auto done = f.task_op("tasks/get", id);
  REQUIRE(std::string(done["result"]["status"].GetString()) == "completed");
  CHECK(std::string(done["result"]["result"]["content"][0]["text"].GetString()) == "name \"Ada\", confirm true");
}

TEST_CASE("mcp request: a task whose process stopped is failed by its next activation, with the reaper's error") {
  TaskFixture f;
  std::string id = f.create(R"({"name":"slow_compute","arguments":{"seconds":60}})");
  CHECK(f.count_index() == 1);
  f.expected_active = 1;  // the task's work holds it in memory
  f.restart();
  f.expected_active = 0;
  // Boot wakes every task the index names; the activation fails the dead one at once.
  auto woken = actors::wake_running_tasks(*f.runtime);
  REQUIRE(woken.ok());
  CHECK(*woken == 1);
  f.runtime->run_until_idle();
  CHECK(f.count_index() == 0);
  auto failed = f.task_op("tasks/get", id);
  REQUIRE(std::string(failed["result"]["status"].GetString()) == "failed");
  CHECK(std::string(failed["result"]["error"]["data"]["reason"].GetString()) == "server_restart");
  CHECK(failed["result"]["error"]["data"]["retrySafe"].GetBool() == false);
  CHECK_FALSE(failed["result"].HasMember("result"));
}

TEST_CASE("mcp request: cancel stops a running task; a tool that must be a task needs the extension") {
  TaskFixture f;
  std::string id = f.create(R"({"name":"slow_compute","arguments":{"seconds":60}})");
  CHECK(std::string(f.task_op("tasks/cancel", id)["result"]["resultType"].GetString()) == "complete");
  CHECK(f.status(id) == "cancelled");
  f.run_until(f.clock.now_ms() + 61 * 1000);
  CHECK(f.status(id) == "cancelled");  // the work's end is not recorded over it
  CHECK(f.count_index() == 0);

  auto refused = f.send("tools/call", R"({"name":"failing_job","arguments":{}})", "{}");
  CHECK(refused.status == 400);
  auto error = RequestFixture::message(refused);
  CHECK(error["error"]["code"].GetInt() == mcp::kMissingRequiredClientCapability);
  CHECK(error["error"]["data"]["requiredCapabilities"]["extensions"].HasMember(mcp::kTasksExtension));
  // Without the extension a tool that may be a task answers the request itself.
  auto sync = RequestFixture::message(f.send("tools/call", R"({"name":"slow_compute","arguments":{"seconds":0}})", "{}"));
  CHECK(std::string(sync["result"]["resultType"].GetString()) == "complete");
  // A protocol error of the tool's fails its task.
  std::string broken = f.create(R"({"name":"protocol_error_job","arguments":{}})");
  f.run_until(f.clock.now_ms() + 500);
  auto failed = f.task_op("tasks/get", broken);
  CHECK(std::string(failed["result"]["status"].GetString()) == "failed");
  CHECK(failed["result"]["error"]["code"].GetInt() == mcp::kInternalError);
}
