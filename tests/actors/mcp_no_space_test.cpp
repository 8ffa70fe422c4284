// A session on a store whose disk is full (FaultyBackend::set_no_space; the real full disk
// is tests/storage/disk_full_test.cpp and tests/e2e/disk_full.test.mjs): requests that
// must write are answered 507 before anything runs, resumes still replay, and everything
// works again once space returns.
#include <doctest/doctest.h>

#include "dorm/mcp/endpoint.hpp"
#include "dorm/runtime/errors.hpp"
#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

std::string kv_put(int id, const std::string& key) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"kv_put","arguments":{"key":")" + key +
         R"(","value":"v"}}})";
}

std::string kv_get(int id, const std::string& key) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"kv_get","arguments":{"key":")" + key + R"("}}})";
}

void check_storage_full(const HttpResponse& r) {
  CHECK(r.status == 507);
  CHECK(header(r, "Retry-After") == "10");
  rapidjson::Document body;
  body.Parse(r.body.c_str());
  REQUIRE(!body.HasParseError());
  CHECK(body["id"].IsNull());
  CHECK(body["error"]["code"].GetInt() == -32000);
  CHECK(std::string(body["error"]["data"]["reason"].GetString()) == "no_space");
  CHECK(std::string(body["error"]["message"].GetString()).find("storage is full") != std::string::npos);
}

}  // namespace

TEST_CASE("full store: a POST gets 507 before any tool runs, a resume still replays, space brings writes back") {
  SessionFixture f;
  const std::string s = "s-no-space-0001";
  REQUIRE(f.initialize(s).status == 200);
  REQUIRE(f.post(s, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").status == 202);
  auto stored = f.post(s, kv_put(2, "before"));
  REQUIRE(stored.status == 200);
  auto priming = event_id(stored, 0);
  REQUIRE(priming.has_value());

  f.faulty.set_no_space(true);
  check_storage_full(f.post(s, kv_put(3, "during")));
  check_storage_full(f.initialize("s-no-space-0002"));
  check_storage_full(f.simple(SessionCall::Kind::remove, s));
  // Refused by the session's own check, before it ran anything: it never even tried to
  // commit, so no tool ran either (a tool's writes belong to its turn's commit).
  CHECK(f.faulty.counters().no_space_commits == 0);

  // A resume only reads: the stored result of the call before comes back.
  SessionCall resume;
  resume.kind = SessionCall::Kind::get;
  resume.session_id = s;
  resume.caller = f.alice;
  resume.last_event_id = priming->to_string();
  auto replay = f.call(std::move(resume));
  CHECK(replay.status == 200);
  auto replayed = events(replay);
  REQUIRE(replayed.size() == 1);
  CHECK(text_of(replayed[0]) == "stored before");

  f.faulty.set_no_space(false);
  auto missing = events(f.post(s, kv_get(4, "during")));
  REQUIRE(missing.size() == 1);
  CHECK(text_of(missing[0]) == "no value stored under 'during'");
  REQUIRE(f.post(s, kv_put(5, "during")).status == 200);
  auto found = events(f.post(s, kv_get(6, "during")));
  REQUIRE(found.size() == 1);
  CHECK(text_of(found[0]) == "v");
  f.expected_active = 1;
}

TEST_CASE("full store: a commit refused for space after the session's check is answered 507 too") {
  // The disk fills between the session's check and its turn's commit: the turn fails with
  // the runtime's no_space error, which the endpoint answers like the session does.
  check_storage_full(mcp::to_response(make_error(RuntimeErrc::no_space, "rocksdb refuses writes")));
  CHECK(mcp::to_response(make_error(RuntimeErrc::turn_failed)).status == 503);
}
