// Requests a tool sends to its client (elicitation, sampling, roots), on virtual time:
// the request goes out on the call's stream, the client's POSTed answer (or error)
// reaches the waiting tool, a missing capability fails at once, silence times out, and
// an answer that matches nothing is accepted and dropped.
#include <doctest/doctest.h>

#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

constexpr std::string_view kBoth = R"({"elicitation":{},"sampling":{}})";

std::string ask(std::string_view id, std::string_view method, std::string_view params = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::string(id) +
         R"(,"method":"tools/call","params":{"name":"ask","arguments":{"method":")" +
         std::string(method) + R"(","params":)" + std::string(params) + "}}}";
}

// Starts a call of `ask` and returns its streamed response after the POST's turn.
std::shared_ptr<std::optional<HttpResponse>> start(SessionFixture& f, const std::string& s,
                                                   const std::string& body) {
  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(body);
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  f.send(std::move(c), answer);
  f.runtime->run_until_idle();
  REQUIRE(answer->has_value());
  return answer;
}

}  // namespace

TEST_CASE("client requests: an elicitation goes out on the call's stream; the client's answer finishes the call") {
  SessionFixture f;
  const std::string s = "s-ask-elicit-00001";
  REQUIRE(f.initialize(s, "2025-11-25", f.alice, kBoth).status == 200);
  auto answer = start(f, s, ask("7", "elicitation/create",
                                R"({"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}})"));
  auto& res = **answer;
  REQUIRE(res.stream);
  CHECK_FALSE(read(res).over);
  auto ev = events(res);
  REQUIRE(ev.size() == 1);
  CHECK(std::string(ev[0]["method"].GetString()) == "elicitation/create");
  CHECK(std::string(ev[0]["params"]["message"].GetString()) == "Your name?");
  // An id of the session's own: a string that names the activation.
  REQUIRE(ev[0]["id"].IsString());
  const std::string id = ev[0]["id"].GetString();
  CHECK(id.rfind("dorm-", 0) == 0);

  // A client request with the same id as ours is a different request: it does not
  // answer ours.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + id + R"(","method":"ping"})").status == 200);
  CHECK_FALSE(read(res).over);

  auto reply = f.post(s, R"({"jsonrpc":"2.0","id":")" + id +
                             R"(","result":{"action":"accept","content":{"name":"Ada"}}})");
  CHECK(reply.status == 202);
  CHECK(reply.body.empty());
  CHECK(read(res).over);
  ev = events(res);
  REQUIRE(ev.size() == 2);
  CHECK(ev[1]["id"].GetInt() == 7);
  CHECK_FALSE(ev[1]["result"]["isError"].GetBool());
  CHECK(text_of(ev[1]) == R"({"action":"accept","content":{"name":"Ada"}})");

  // A second answer to the same request, and one to a made-up id: accepted and dropped.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + id + R"(","result":{"action":"decline"}})").status == 202);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":"nope","error":{"code":-1,"message":"x"}})").status == 202);
  f.expected_active = 1;
}

TEST_CASE("client requests: a client error reaches the tool; each request gets a new id") {
  SessionFixture f;
  const std::string s = "s-ask-sample-00001";
  REQUIRE(f.initialize(s, "2025-11-25", f.alice, kBoth).status == 200);
  auto first = start(f, s, ask("1", "sampling/createMessage", R"({"messages":[],"maxTokens":5})"));
  auto second = start(f, s, ask("2", "sampling/createMessage", R"({"messages":[],"maxTokens":5})"));
  read(**first);
  read(**second);
  auto a = events(**first);
  auto b = events(**second);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  const std::string id_a = a[0]["id"].GetString();
  const std::string id_b = b[0]["id"].GetString();
  CHECK(id_a != id_b);
  // Answers in the opposite order, both in one POST is not allowed for 2025-11-25; two POSTs.
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + id_b +
                      R"(","error":{"code":-32600,"message":"user refused"}})").status == 202);
  CHECK(read(**second).over);
  CHECK_FALSE(read(**first).over);
  b = events(**second);
  REQUIRE(b.size() == 2);
  CHECK(b[1]["result"]["isError"].GetBool());
  CHECK(text_of(b[1]) == "the client answered with error -32600: user refused");
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + id_a +
                      R"(","result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}})")
            .status == 202);
  CHECK(read(**first).over);
  a = events(**first);
  REQUIRE(a.size() == 2);
  CHECK_FALSE(a[1]["result"]["isError"].GetBool());
  f.expected_active = 1;
}

TEST_CASE("client requests: without the capability the tool fails at once and nothing is sent") {
  SessionFixture f;
  const std::string s = "s-ask-nocap-000001";
  REQUIRE(f.initialize(s, "2025-11-25", f.alice, R"({"sampling":{}})").status == 200);
  auto res = f.post(s, ask("1", "elicitation/create", R"({"message":"?","requestedSchema":{"type":"object"}})"));
  auto ev = events(res);
  REQUIRE(ev.size() == 1);  // the result only: no request went out
  CHECK(ev[0]["result"]["isError"].GetBool());
  CHECK(text_of(ev[0]) ==
        "the client did not declare the elicitation capability in initialize, so it cannot be "
        "sent elicitation/create");
  // url mode needs elicitation.url; a method no capability covers is refused too.
  auto with_form = std::string("s-ask-nocap-000002");
  REQUIRE(f.initialize(with_form, "2025-11-25", f.alice, R"({"elicitation":{"form":{}}})").status == 200);
  ev = events(f.post(with_form, ask("1", "elicitation/create", R"({"mode":"url","message":"?","url":"https://x","elicitationId":"e"})")));
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]) == R"(the client does not support elicitation mode "url")");
  ev = events(f.post(with_form, ask("2", "tools/list")));
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]).find("not tools/list") != std::string::npos);
  ev = events(f.post(with_form, ask("3", "roots/list")));
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]).find("roots capability") != std::string::npos);
  f.expected_active = 2;
}

TEST_CASE("client requests: a client that never answers gets the tool a timeout after 60 s; a late answer is dropped") {
  SessionFixture f;
  const std::string s = "s-ask-timeout-0001";
  REQUIRE(f.initialize(s, "2025-11-25", f.alice, kBoth).status == 200);
  const auto t0 = f.clock.now_ms();
  auto answer = start(f, s, ask("1", "elicitation/create", R"({"message":"?","requestedSchema":{"type":"object"}})"));
  read(**answer);
  auto ev = events(**answer);
  REQUIRE(ev.size() == 1);
  const std::string id = ev[0]["id"].GetString();
  f.run_until(t0 + 59'999);
  CHECK_FALSE(read(**answer).over);
  f.run_until(t0 + 60'000);
  CHECK(read(**answer).over);
  ev = events(**answer);
  REQUIRE(ev.size() == 2);
  CHECK(ev[1]["result"]["isError"].GetBool());
  CHECK(text_of(ev[1]) == "the client did not answer request " + id + " within 60000 ms");
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + id + R"(","result":{"action":"accept"}})").status == 202);
  f.expected_active = 1;
}

TEST_CASE("client requests: a cancelled call never sees its reply") {
  SessionFixture f;
  const std::string s = "s-ask-cancel-00001";
  REQUIRE(f.initialize(s, "2025-11-25", f.alice, kBoth).status == 200);
  auto answer = start(f, s, ask("\"c\"", "elicitation/create", R"({"message":"?","requestedSchema":{"type":"object"}})"));
  read(**answer);
  auto ev = events(**answer);
  REQUIRE(ev.size() == 1);
  const std::string id = ev[0]["id"].GetString();
  CHECK(f.post(s, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}})").status == 202);
  CHECK(read(**answer).over);
  CHECK(f.post(s, R"({"jsonrpc":"2.0","id":")" + id + R"(","result":{"action":"accept"}})").status == 202);
  CHECK(events(**answer).size() == 1);  // no result after the cancellation
  f.expected_active = 1;
}
