#include "dorm/mcp/jsonrpc.hpp"

#include <doctest/doctest.h>

#include <string>
#include <unordered_set>

using dorm::mcp::Message;
using dorm::mcp::parse_body;
using dorm::mcp::ParsedBody;
using dorm::mcp::ParseFailure;
using dorm::mcp::RequestId;

namespace {

ParsedBody parsed(std::string_view body) {
  auto r = parse_body(body);
  if (auto* f = std::get_if<ParseFailure>(&r)) FAIL_CHECK("unexpected failure: " << f->message);
  REQUIRE(std::holds_alternative<ParsedBody>(r));
  return std::get<ParsedBody>(std::move(r));
}

Message single(std::string_view body) {
  ParsedBody p = parsed(body);
  REQUIRE(p.messages.size() == 1);
  CHECK_FALSE(p.batch);
  return p.messages[0];
}

ParseFailure failure(std::string_view body) {
  auto r = parse_body(body);
  REQUIRE(std::holds_alternative<ParseFailure>(r));
  return std::get<ParseFailure>(std::move(r));
}

}  // namespace

TEST_CASE("jsonrpc: a request keeps its id, method and params as compact JSON") {
  Message m = single(R"({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": { "name": "x", "arguments": { "a": [1, 2.5, "s"] } } })");
  CHECK(m.kind == Message::Kind::request);
  REQUIRE(m.id);
  CHECK(*m.id == RequestId(7));
  CHECK(m.method == "tools/call");
  CHECK(m.params == R"({"name":"x","arguments":{"a":[1,2.5,"s"]}})");
  CHECK(m.result.empty());
  CHECK(m.error.empty());
  CHECK_FALSE(m.is_response());
}

TEST_CASE("jsonrpc: string ids, notifications, params absent or an array") {
  Message r = single(R"({"jsonrpc":"2.0","id":"abc-1","method":"ping"})");
  CHECK(r.kind == Message::Kind::request);
  CHECK(*r.id == RequestId(std::string("abc-1")));
  CHECK(r.params.empty());

  Message n = single(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK(n.kind == Message::Kind::notification);
  CHECK_FALSE(n.id);

  Message a = single(R"({"jsonrpc":"2.0","id":0,"method":"m","params":[1,{"b":null}]})");
  CHECK(a.params == R"([1,{"b":null}])");

  // Negative and extreme integer ids are integers; unknown members are ignored.
  CHECK(*single(R"({"jsonrpc":"2.0","id":-5,"method":"m","x":1})").id == RequestId(-5));
  CHECK(*single(R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"m"})").id ==
        RequestId(INT64_MAX));
  CHECK(*single(R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"})").id ==
        RequestId(INT64_MIN));
}

TEST_CASE("jsonrpc: responses") {
  Message ok = single(R"({"jsonrpc":"2.0","id":3,"result":{"action":"accept"}})");
  CHECK(ok.kind == Message::Kind::result_response);
  CHECK(ok.result == R"({"action":"accept"})");
  CHECK(ok.is_response());

  Message scalar = single(R"({"jsonrpc":"2.0","id":"x","result":null})");
  CHECK(scalar.kind == Message::Kind::result_response);
  CHECK(scalar.result == "null");

  Message err =
      single(R"({"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"no","data":[1]}})");
  CHECK(err.kind == Message::Kind::error_response);
  CHECK(*err.id == RequestId(4));
  CHECK(err.error == R"({"code":-32602,"message":"no","data":[1]})");

  Message null_id =
      single(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}})");
  CHECK(null_id.kind == Message::Kind::error_response);
  CHECK_FALSE(null_id.id);
}

TEST_CASE("jsonrpc: not JSON or not UTF-8 is a parse error (-32700) without id") {
  for (std::string_view bad :
       {"", " ", "{", "{\"jsonrpc\":\"2.0\",", "nope", "{\"a\":1}}", "[1,]", "{'a':1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} x", "1e400"}) {
    CAPTURE(bad);
    ParseFailure f = failure(bad);
    CHECK(f.code == dorm::mcp::kParseError);
    CHECK_FALSE(f.id);
    CHECK(f.message.starts_with("Parse error: "));
  }
  // Invalid UTF-8: a lone continuation byte, an overlong encoding, an encoded surrogate.
  for (std::string bad : {std::string("{\"jsonrpc\":\"2.0\",\"method\":\"\x80\"}"),
                          std::string("{\"jsonrpc\":\"2.0\",\"method\":\"\xc0\xaf\"}"),
                          std::string("{\"jsonrpc\":\"2.0\",\"method\":\"\xed\xa0\x80\"}"),
                          std::string("{\"jsonrpc\":\"2.0\",\"method\":\"\\ud800\"}")}) {
    CAPTURE(bad);
    CHECK(failure(bad).code == dorm::mcp::kParseError);
  }
  // A NUL byte does not end the input early.
  std::string with_nul("{\"jsonrpc\":\"2.0\",\"method\":\"m\"}");
  with_nul += '\0';
  with_nul += "junk";
  ParseFailure f = failure(with_nul);
  CHECK(f.code == dorm::mcp::kParseError);
  CHECK(f.message.find("NUL") != std::string::npos);
}

TEST_CASE("jsonrpc: nesting is bounded, also for deep params") {
  std::string ok = R"({"jsonrpc":"2.0","method":"m","params":)";
  // The envelope is one level; params may nest 127 more.
  ok += std::string(127, '[') + std::string(127, ']') + "}";
  CHECK(single(ok).kind == Message::Kind::notification);

  std::string deep = R"({"jsonrpc":"2.0","method":"m","params":)";
  deep += std::string(128, '[') + std::string(128, ']') + "}";
  ParseFailure f = failure(deep);
  CHECK(f.code == dorm::mcp::kParseError);
  CHECK(f.message.find("128") != std::string::npos);

  // A megabyte of '[' neither overflows the stack nor is accepted.
  CHECK(failure(std::string(1 << 20, '[')).code == dorm::mcp::kParseError);
}

TEST_CASE("jsonrpc: valid JSON that is not a JSON-RPC 2.0 message is -32600") {
  struct Case {
    const char* body;
    const char* says;
  };
  for (Case c : {
           Case{R"(42)", "JSON object"},
           Case{R"("x")", "JSON object"},
           Case{R"(null)", "JSON object"},
           Case{R"({"id":1,"method":"m"})", "\"jsonrpc\""},
           Case{R"({"jsonrpc":"1.0","id":1,"method":"m"})", "\"jsonrpc\""},
           Case{R"({"jsonrpc":2.0,"id":1,"method":"m"})", "\"jsonrpc\""},
           Case{R"({"jsonrpc":"2.0","id":1.5,"method":"m"})", "\"id\""},
           Case{R"({"jsonrpc":"2.0","id":1.0,"method":"m"})", "\"id\""},
           Case{R"({"jsonrpc":"2.0","id":9223372036854775808,"method":"m"})", "\"id\""},
           Case{R"({"jsonrpc":"2.0","id":true,"method":"m"})", "\"id\""},
           Case{R"({"jsonrpc":"2.0","id":[1],"method":"m"})", "\"id\""},
           Case{R"({"jsonrpc":"2.0","id":{},"method":"m"})", "\"id\""},
           Case{R"({"jsonrpc":"2.0","id":null,"method":"m"})", "null is not a valid request id"},
           Case{R"({"jsonrpc":"2.0","id":1,"method":5})", "\"method\""},
           Case{R"({"jsonrpc":"2.0","id":1,"method":null})", "\"method\""},
           Case{R"({"jsonrpc":"2.0","id":1,"method":"m","params":"x"})", "\"params\""},
           Case{R"({"jsonrpc":"2.0","id":1,"method":"m","params":3})", "\"params\""},
           Case{R"({"jsonrpc":"2.0","id":1,"method":"m","params":null})", "\"params\""},
           Case{R"({"jsonrpc":"2.0","id":1,"method":"m","result":{}})", "both"},
           Case{R"({"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":""}})", "both"},
           Case{R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}})", "both"},
           Case{R"({"jsonrpc":"2.0","id":1})", "needs"},
           Case{R"({"jsonrpc":"2.0"})", "needs"},
           Case{R"({"jsonrpc":"2.0","result":1})", "must have an \"id\""},
           Case{R"({"jsonrpc":"2.0","error":{"code":1,"message":"m"}})", "must have an \"id\""},
           Case{R"({"jsonrpc":"2.0","id":null,"result":1})", "string or integer id"},
           Case{R"({"jsonrpc":"2.0","id":1,"result":1,"params":{}})", "\"params\""},
           Case{R"({"jsonrpc":"2.0","id":1,"error":"boom"})", "\"error\""},
           Case{R"({"jsonrpc":"2.0","id":1,"error":{"message":"m"}})", "\"error\""},
           Case{R"({"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}})", "\"error\""},
           Case{R"({"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}})", "\"error\""},
           Case{R"({"jsonrpc":"2.0","id":1,"error":{"code":1}})", "\"error\""},
           Case{R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}})", "\"error\""},
           Case{R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"m"})", "more than once"},
           Case{R"({"jsonrpc":"2.0","id":1,"id":2,"method":"m"})", "more than once"},
           Case{R"({"jsonrpc":"2.0","id":1,"method":"m","method":"n"})", "more than once"},
       }) {
    CAPTURE(c.body);
    ParseFailure f = failure(c.body);
    CHECK(f.code == dorm::mcp::kInvalidRequest);
    CHECK(f.message.starts_with("Invalid Request: "));
    CHECK(f.message.find(c.says) != std::string::npos);
  }
}

TEST_CASE("jsonrpc: an invalid request whose id was readable carries that id") {
  ParseFailure f = failure(R"({"jsonrpc":"1.0","id":"q","method":"m"})");
  REQUIRE(f.id);
  CHECK(*f.id == RequestId(std::string("q")));
  CHECK(failure(R"({"jsonrpc":"2.0","id":5,"method":7})").id == RequestId(5));
  CHECK_FALSE(failure(R"({"jsonrpc":"2.0","id":1.5,"method":"m"})").id);
}

TEST_CASE("jsonrpc: batches") {
  ParsedBody p = parsed(R"([{"jsonrpc":"2.0","id":1,"method":"a"},
                            {"jsonrpc":"2.0","method":"b"}])");
  CHECK(p.batch);
  REQUIRE(p.messages.size() == 2);
  CHECK(p.messages[0].method == "a");
  CHECK(p.messages[1].kind == Message::Kind::notification);

  ParsedBody one = parsed(R"([{"jsonrpc":"2.0","id":1,"result":{}}])");
  CHECK(one.batch);
  CHECK(one.messages.size() == 1);

  ParsedBody responses = parsed(R"([{"jsonrpc":"2.0","id":1,"result":{}},
                                    {"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}])");
  CHECK(responses.messages.size() == 2);

  SUBCASE("failures name the problem and carry no id") {
    struct Case {
      std::string body;
      const char* says;
    };
    std::string too_long = "[";
    for (std::size_t i = 0; i <= dorm::mcp::kMaxBatchMessages; ++i) {
      too_long += (i ? "," : "") + std::string(R"({"jsonrpc":"2.0","method":"m"})");
    }
    too_long += "]";
    for (const Case& c : {
             Case{"[]", "empty"},
             Case{"[1]", "batch element 0"},
             Case{R"([{"jsonrpc":"2.0","method":"m"},[]])", "batch element 1"},
             Case{R"([{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","id":1}])",
                  "batch element 1"},
             Case{R"([{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":1,"result":1}])",
                  "not both"},
             Case{too_long, "at most 100"},
         }) {
      CAPTURE(c.body.substr(0, 80));
      ParseFailure f = failure(c.body);
      CHECK(f.code == dorm::mcp::kInvalidRequest);
      CHECK_FALSE(f.id);
      CHECK(f.message.find(c.says) != std::string::npos);
    }
  }

  std::string at_limit = "[";
  for (std::size_t i = 0; i < dorm::mcp::kMaxBatchMessages; ++i) {
    at_limit += (i ? "," : "") + std::string(R"({"jsonrpc":"2.0","method":"m"})");
  }
  at_limit += "]";
  CHECK(parsed(at_limit).messages.size() == dorm::mcp::kMaxBatchMessages);
}

TEST_CASE("jsonrpc: RequestId forms, order, hashing and keys") {
  RequestId i(42);
  RequestId s(std::string("42"));
  CHECK(i.is_integer());
  CHECK(s.is_string());
  CHECK(i != s);
  CHECK(i.to_json() == "42");
  CHECK(s.to_json() == "\"42\"");
  CHECK(RequestId(std::string("a\"b\n")).to_json() == R"("a\"b\n")");
  CHECK(i.to_key() == "i:42");
  CHECK(s.to_key() == "s:42");
  CHECK(RequestId(-3).to_key() == "i:-3");
  CHECK(RequestId(std::string()).to_key() == "s:");

  for (const RequestId& id : {i, s, RequestId(-3), RequestId(INT64_MIN), RequestId(std::string()),
                              RequestId(std::string("x:y\0z", 5))}) {
    auto back = RequestId::from_key(id.to_key());
    REQUIRE(back);
    CHECK(*back == id);
  }
  for (std::string_view bad :
       {"", "i:", "i:x", "i:007", "i:-0", "i:+1", "i:1 ", "x:1", "I:1", "i:9223372036854775808"}) {
    CAPTURE(bad);
    CHECK_FALSE(RequestId::from_key(bad));
  }

  CHECK(RequestId(1) < RequestId(2));
  CHECK(RequestId(std::string("a")) < RequestId(std::string("b")));
  std::unordered_set<RequestId> set{i, s, RequestId(42)};
  CHECK(set.size() == 2);
}

TEST_CASE("jsonrpc: writers produce compact messages that parse back") {
  using namespace dorm::mcp;
  CHECK(result_response(RequestId(1), R"({"tools":[]})") ==
        R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})");
  CHECK(error_response(RequestId(std::string("a")), kMethodNotFound, "Method not found: x") ==
        R"({"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found: x"}})");
  CHECK(error_response(std::nullopt, kInvalidRequest, "bad \"quote\"") ==
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad \"quote\""}})");
  CHECK(
      error_response(RequestId(9), kRequestInterrupted, "interrupted",
                     R"({"reason":"server_restart","retrySafe":false})") ==
      R"({"jsonrpc":"2.0","id":9,"error":{"code":-32001,"message":"interrupted","data":{"reason":"server_restart","retrySafe":false}}})");
  CHECK(notification("notifications/progress", R"({"progress":1})") ==
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})");
  CHECK(notification("notifications/initialized") ==
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK(request(RequestId(std::string("e1")), "elicitation/create", R"({"message":"ok?"})") ==
        R"({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"ok?"}})");
  CHECK(request(RequestId(2), "ping") == R"({"jsonrpc":"2.0","id":2,"method":"ping"})");

  // Non-ASCII text goes through as UTF-8, control characters are escaped.
  std::string written = error_response(RequestId(1), 1, "h\xc3\xa9\x01");
  CHECK(written.find("h\xc3\xa9\\u0001") != std::string::npos);
  CHECK(single(written).kind == Message::Kind::error_response);
}

TEST_CASE("jsonrpc: to_json round-trips every kind of message") {
  for (
      std::string_view body : {
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":[1.25,-0.0,1e300,"\u00e9"]}})",
          R"({"jsonrpc":"2.0","id":"s","method":"m"})",
          R"({"jsonrpc":"2.0","method":"n","params":[]})",
          R"({"jsonrpc":"2.0","id":-1,"result":"x"})",
          R"({"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":{"k":[true]}}})",
          R"({"jsonrpc":"2.0","id":"e","error":{"message":"m","code":5,"extra":1}})",
      }) {
    CAPTURE(body);
    Message m = single(body);
    Message again = single(dorm::mcp::to_json(m));
    CHECK(again == m);
  }
}

TEST_CASE("jsonrpc: kind names") {
  CHECK(dorm::mcp::to_string(Message::Kind::request) == "request");
  CHECK(dorm::mcp::to_string(Message::Kind::notification) == "notification");
  CHECK(dorm::mcp::to_string(Message::Kind::result_response) == "result_response");
  CHECK(dorm::mcp::to_string(Message::Kind::error_response) == "error_response");
}
