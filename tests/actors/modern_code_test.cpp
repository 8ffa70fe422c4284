// `execute` in requests of MCP 2026-07-28, on virtual time with a real engine pool: an
// approval ends a round with input_required and the execution is stored as its journal;
// the retry (after a restart, too) replays it — each tool ran once — and delivers the
// answer; a decline rejects the code's call; a client that cannot be asked gets -32021;
// `resume` says where it belongs.
#include <doctest/doctest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/actors/code_mode.hpp"
#include "dorm/engine/pool.hpp"
#include "request_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

struct CodeRequestFixture : RequestFixture {
  std::unique_ptr<engine::Pool> pool;
  actors::CodeModeOptions code;
  actors::McpSessionOptions sessions;  // enable_code_mode's other half; unused here

  CodeRequestFixture() {
    engine::PoolOptions p;
    p.worker_path = DORM_ENGINE_WORKER;
    p.workers = 1;
    p.slots_per_worker = 2;
    auto created = engine::Pool::create(p);
    REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
    pool = std::move(created).value();
    code.pool = pool.get();
    REQUIRE(actors::enable_code_mode(tools, sessions, code).ok());
    options.code_mode = &code;
    engine = true;
  }
  ~CodeRequestFixture() { stop(); }

  // tools/call execute {code}, with answers (an inputResponses object, or empty) and the
  // state to send back.
  rapidjson::Document execute(const std::string& code_text, std::string_view answers = {},
                              std::string_view state = {}, std::string_view capabilities = kAll) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.String(code_text.c_str());
    std::string params = R"({"name":"execute","arguments":{"code":)" + std::string(buffer.GetString()) + "}";
    if (!answers.empty()) params += R"(,"inputResponses":)" + std::string(answers);
    params += "}";
    last = send("tools/call", params, capabilities, state);
    return message(last);
  }
  HttpResponse last;
};

// Two tallies around an approved increment: how often each tool really ran.
constexpr const char* kApproved = R"(
  const before = await tools.tally({});
  await tools.storage.put({key: "seen", value: before});
  const n = await tools.counter_increment({});
  const after = await tools.tally({});
  return {before, n, after, seen: await tools.storage.get({key: "seen"})};
)";

constexpr const char* kAccept = R"({"approval-3":{"action":"accept","content":{}}})";

}  // namespace

TEST_CASE("modern code mode: an approval ends the round; the retry after a restart replays it, each tool ran once") {
  CodeRequestFixture f;
  const std::size_t before = f.stored();
  auto paused = f.execute(kApproved);
  std::string state = state_of(paused);
  const auto& asked = paused["result"]["inputRequests"];
  REQUIRE(asked.HasMember("approval-3"));
  CHECK(std::string(asked["approval-3"]["method"].GetString()) == "elicitation/create");
  CHECK(std::string(asked["approval-3"]["params"]["message"].GetString()) ==
        "Approve calling counter_increment with {}?");
  CHECK(f.stored() > before);  // the record and the journal

  f.restart();
  auto done = f.execute(kApproved, kAccept, state);
  REQUIRE(done.HasMember("result"));
  CHECK(std::string(done["result"]["resultType"].GetString()) == "complete");
  const auto& out = done["result"]["structuredContent"];
  REQUIRE(std::string(out["status"].GetString()) == "completed");
  // The first tally ran before the pause and was replayed, not run again.
  CHECK(out["result"]["before"].GetInt() == 1);
  CHECK(out["result"]["n"].GetInt() == 1);
  CHECK(out["result"]["after"].GetInt() == 2);
  CHECK(out["result"]["seen"].GetInt() == 1);
  CHECK(f.stored() == before);
  CHECK(f.runtime->active_objects() == 0);

  // The state was used: sent again, it resumes nothing.
  CHECK(f.execute(kApproved, kAccept, state)["error"]["code"].GetInt() == mcp::kInvalidParams);
}

TEST_CASE("modern code mode: two approvals take two rounds; a decline rejects the code's call and the tool never runs") {
  CodeRequestFixture f;
  const std::string code = R"(
    const first = await tools.counter_increment({});
    let second;
    try { second = await tools.counter_increment({}); } catch (e) { second = String(e.message); }
    return {first, second, count: await tools.counter_get({})};
  )";
  std::string s1 = state_of(f.execute(code));
  auto round2 = f.execute(code, R"({"approval-1":{"action":"accept","content":{}}})", s1);
  std::string s2 = state_of(round2);
  CHECK(round2["result"]["inputRequests"].HasMember("approval-2"));
  CHECK_FALSE(round2["result"]["inputRequests"].HasMember("approval-1"));
  auto done = f.execute(code, R"({"approval-2":{"action":"decline"}})", s2);
  const auto& out = done["result"]["structuredContent"];
  REQUIRE(std::string(out["status"].GetString()) == "completed");
  CHECK(out["result"]["first"].GetInt() == 1);
  CHECK(std::string(out["result"]["second"].GetString()) == "the user declined tools.counter_increment");
  CHECK(out["result"]["count"].GetInt() == 1);
}

TEST_CASE("modern code mode: without elicitation an approval is -32021; code without approvals just runs") {
  CodeRequestFixture f;
  f.execute("return await tools.counter_increment({})", {}, {}, "{}");
  CHECK(f.last.status == 400);
  auto refused = RequestFixture::message(f.last);
  CHECK(refused["error"]["code"].GetInt() == mcp::kMissingRequiredClientCapability);
  CHECK(refused["error"]["data"]["requiredCapabilities"].HasMember("elicitation"));

  auto plain = f.execute(R"(console.log("hi"); return (await tools.tally({})) + 41)", {}, {}, "{}");
  CHECK(std::string(plain["result"]["content"][0]["text"].GetString()) == "42\n\nLogs:\n[log] hi");
  CHECK(f.execute("  ")["result"]["isError"].GetBool());
  auto resume = RequestFixture::message(
      f.send("tools/call", R"({"name":"resume","arguments":{"executionId":"exec_1","action":"accept"}})"));
  CHECK(std::string(resume["result"]["content"][0]["text"].GetString()).find("input_required") != std::string::npos);
}
