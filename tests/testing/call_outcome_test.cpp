// The pure parts of the simulated client: the SDK's reconnect rules, and how outcomes
// sum up to a table row.
#include <doctest/doctest.h>

#include "dorm/testing/call_outcome.hpp"
#include "dorm/testing/sdk_reconnect.hpp"

using namespace dorm::testing;

TEST_CASE("reconnect rules: the server's retry hint wins; without it the SDK's backoff, capped") {
  ReconnectOptions sdk;
  CHECK(reconnect_delay_ms(sdk, 0, 500) == 500);
  CHECK(reconnect_delay_ms(sdk, 1, 500) == 500);
  CHECK(reconnect_delay_ms(sdk, 0, std::nullopt) == 1000);
  CHECK(reconnect_delay_ms(sdk, 1, std::nullopt) == 1500);
  CHECK(reconnect_delay_ms(sdk, 2, std::nullopt) == 2250);
  CHECK(reconnect_delay_ms(sdk, 20, std::nullopt) == 30'000);
  CHECK(sdk.max_retries == 2);  // then the SDK gives up for good
}

TEST_CASE("reconnect rules: a POST stream resumes only after an id, and never after a result") {
  CHECK_FALSE(resumes_after_end(false, false, false));  // no priming: lost
  CHECK(resumes_after_end(false, true, false));
  CHECK_FALSE(resumes_after_end(false, true, true));
  CHECK(resumes_after_end(true, false, false));         // a GET stream always may
  CHECK_FALSE(resumes_after_end(true, true, true));     // a result ends it
}

TEST_CASE("reconnect rules: what a resume's answer means") {
  CHECK(classify_resume(200, true) == ResumeAnswer::stream);
  CHECK(classify_resume(204, false) == ResumeAnswer::finished);
  CHECK(classify_resume(405, false) == ResumeAnswer::abandoned);
  CHECK(classify_resume(405, true) == ResumeAnswer::abandoned);
  CHECK(classify_resume(404, true) == ResumeAnswer::failed);
  CHECK(classify_resume(503, false) == ResumeAnswer::failed);
}

TEST_CASE("outcome of an error response: its code and data.reason") {
  auto reaped = outcome_of_error(
      R"({"code":-32001,"message":"interrupted","data":{"reason":"server_restart","retrySafe":false}})");
  CHECK(reaped.kind == OutcomeKind::failed);
  CHECK(reaped.code == -32001);
  CHECK(reaped.reason == "server_restart");
  auto plain = outcome_of_error(R"({"code":-32602,"message":"bad"})");
  CHECK(plain.code == -32602);
  CHECK(plain.reason == "code -32602");
  auto garbled = outcome_of_error("not json");
  CHECK(garbled.kind == OutcomeKind::failed);
  CHECK(garbled.reason == "code 0");
}

TEST_CASE("percentile: nearest rank over unsorted values; none for no values") {
  CHECK_FALSE(percentile({}, 0.5).has_value());
  CHECK(percentile({5, 1, 3}, 0.5) == 3);
  CHECK(percentile({1, 2, 3, 4}, 0.5) == 2);
  CHECK(percentile({1, 2, 3, 4}, 0.99) == 4);
  CHECK(percentile({1, 2, 3, 4}, 0.0) == 1);
}

TEST_CASE("summary: counts by outcome and reason; error times from the deploy, nearest rank") {
  std::vector<CallRecord> calls;
  auto add = [&](OutcomeKind kind, std::string reason, std::optional<std::int64_t> deploy, std::int64_t end) {
    CallRecord r;
    r.outcome = Outcome{kind, kind == OutcomeKind::failed ? -32001 : 0, std::move(reason)};
    r.deploy_ms = deploy;
    r.end_ms = end;
    calls.push_back(r);
  };
  add(OutcomeKind::answered, "", std::nullopt, 10);
  add(OutcomeKind::failed, "server_restart", 1000, 1500);
  add(OutcomeKind::failed, "server_restart", 1000, 1600);
  add(OutcomeKind::failed, "server_draining", 2000, 2100);
  add(OutcomeKind::failed, "connection_refused", std::nullopt, 3000);  // no deploy: no time
  add(OutcomeKind::hung, "", 1000, 61'000);
  add(OutcomeKind::pending, "", 1000, 0);
  auto row = summarize(calls);
  CHECK(row.calls == 7);
  CHECK(row.answered == 1);
  CHECK(row.failed == 4);
  CHECK(row.hung == 1);
  CHECK(row.pending == 1);
  CHECK(row.reasons == std::map<std::string, std::size_t>{
                           {"connection_refused", 1}, {"server_draining", 1}, {"server_restart", 2}});
  CHECK(row.error_ms_p50 == 500);  // of 100, 500, 600
  CHECK(row.error_ms_p99 == 600);
  CHECK(row.error_ms_max == 600);
  CHECK(summarize({}).error_ms_p50 == std::nullopt);
}
