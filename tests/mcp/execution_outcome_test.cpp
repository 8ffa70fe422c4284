// The code-mode execute/resume results: text for the model, emitted items, structured content,
// paused executions, resume failures and internal errors, as the original host formats them.
#include "dorm/mcp/execution_outcome.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <string>

using namespace dorm::mcp;

namespace {

using Status = ExecutionOutcome::Status;

rapidjson::Document parse(const ToolResult& r) {
  rapidjson::Document doc;
  doc.Parse(r.json.data(), r.json.size());
  REQUIRE_MESSAGE(!doc.HasParseError(), r.json);
  REQUIRE(doc.IsObject());
  REQUIRE(doc["content"].IsArray());
  REQUIRE(doc["isError"].IsBool());
  REQUIRE(doc["structuredContent"].IsObject());
  return doc;
}

std::string compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

const rapidjson::Value& block(const rapidjson::Document& doc, rapidjson::SizeType i) {
  REQUIRE(i < doc["content"].Size());
  return doc["content"][i];
}

// The text of content block i, which must be a text block.
std::string text_of(const rapidjson::Document& doc, rapidjson::SizeType i) {
  const auto& b = block(doc, i);
  REQUIRE(std::string(b["type"].GetString()) == "text");
  return std::string(b["text"].GetString(), b["text"].GetStringLength());
}

// The single text block of a result without emitted items.
std::string only_text(const ToolResult& r) {
  auto doc = parse(r);
  REQUIRE(doc["content"].Size() == 1);
  return text_of(doc, 0);
}

std::string structured(const ToolResult& r) {
  return compact(parse(r)["structuredContent"]);
}

ExecutionOutcome completed(std::optional<std::string> result) {
  ExecutionOutcome o;
  o.result_json = std::move(result);
  return o;
}

ExecutionOutcome failed(std::string message) {
  ExecutionOutcome o;
  o.status = Status::error;
  o.error = std::move(message);
  return o;
}

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("execution outcome: a string result is its own text") {
  auto r = format_execution_outcome(completed(R"("hello \"you\"")"));
  CHECK(r.json ==
        R"({"content":[{"type":"text","text":"hello \"you\""}],"isError":false,)"
        R"("structuredContent":{"status":"completed","result":"hello \"you\"","logs":[]}})");
}

TEST_CASE("execution outcome: other results read as JSON.stringify(value, null, 2)") {
  CHECK(only_text(format_execution_outcome(completed(R"({"a":1,"b":[1,2]})"))) ==
        "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}");
  CHECK(only_text(format_execution_outcome(completed("[]"))) == "[]");
  CHECK(only_text(format_execution_outcome(completed(" {} "))) == "{}");
  CHECK(only_text(format_execution_outcome(completed(R"({"a":[],"b":{}})"))) ==
        "{\n  \"a\": [],\n  \"b\": {}\n}");
  CHECK(only_text(format_execution_outcome(completed("42"))) == "42");
  CHECK(only_text(format_execution_outcome(completed("true"))) == "true");
  CHECK(only_text(format_execution_outcome(completed(R"({"x":[1,"a",{"y":null}],"t":false})"))) ==
        "{\n  \"x\": [\n    1,\n    \"a\",\n    {\n      \"y\": null\n    }\n  ],\n"
        "  \"t\": false\n}");
  // Numbers as JavaScript prints them (each expectation is node's JSON.stringify output).
  CHECK(only_text(format_execution_outcome(
            completed("[1.0,1e21,1e-7,0.1,123456789012345680000,-0,1.5e300,0.000001,1e20,"
                      "-2.5e-8,5e-324,1.7976931348623157e308,-3,18446744073709551615]"))) ==
        "[\n  1,\n  1e+21,\n  1e-7,\n  0.1,\n  123456789012345680000,\n  0,\n  1.5e+300,\n"
        "  0.000001,\n  100000000000000000000,\n  -2.5e-8,\n  5e-324,\n"
        "  1.7976931348623157e+308,\n  -3,\n  18446744073709551615\n]");
  // Escapes as JavaScript writes them: lower-case hex, "/" and DEL left alone.
  CHECK(only_text(format_execution_outcome(completed(
            R"({"k\u001f\u000b":"x\u001f\u000e\u0001\b\t\n\f\r/\u007f\u00e9\\u001F"})"))) ==
        "{\n  \"k\\u001f\\u000b\": "
        "\"x\\u001f\\u000e\\u0001\\b\\t\\n\\f\\r/\x7f\xc3\xa9\\\\u001F\"\n}");
  // The structured result is the value itself.
  CHECK(structured(format_execution_outcome(completed(R"({"a":1,"b":[1,2]})"))) ==
        R"({"status":"completed","result":{"a":1,"b":[1,2]},"logs":[]})");
}

TEST_CASE("execution outcome: a long result is cut at 30,000 characters") {
  auto exact = repeat("a", kMaxResultTextChars);
  CHECK(only_text(format_execution_outcome(completed('"' + exact + '"'))) == exact);
  CHECK(only_text(format_execution_outcome(completed('"' + exact + "bcdef\""))) ==
        exact + "\n... [truncated 5 chars]");
  // Characters, not bytes: "é" is two bytes and counts once; the cut never splits it.
  auto accents = repeat("\xc3\xa9", kMaxResultTextChars);
  CHECK(only_text(format_execution_outcome(completed('"' + accents + "\xc3\xa9\xc3\xa9\""))) ==
        accents + "\n... [truncated 2 chars]");
  // JSON text is cut too; the logs come after the cut and are kept whole.
  ExecutionOutcome o = completed("[" + repeat("1,", 20'000) + "1]");
  o.logs = {"[log] done"};
  auto text = only_text(format_execution_outcome(o));
  // 20,001 elements of "  1" plus ",\n" after all but the last, "[\n" and "\n]".
  const std::size_t full = 2 + 20'001 * 3 + 20'000 * 2 + 2;
  CHECK(text.starts_with("[\n  1,\n  1,"));
  CHECK(text.ends_with("\n... [truncated " + std::to_string(full - kMaxResultTextChars) +
                       " chars]\n\nLogs:\n[log] done"));
  CHECK(text.size() == kMaxResultTextChars + std::string("\n... [truncated 70007 chars]").size() +
                           std::string("\n\nLogs:\n[log] done").size());
}

TEST_CASE("execution outcome: no result") {
  auto none = format_execution_outcome(completed(std::nullopt));
  CHECK(only_text(none) == "(no result)");
  CHECK(structured(none) == R"({"status":"completed","result":null,"logs":[]})");
  // As in the original, null and "" are no result either; the structured result keeps them.
  auto null = format_execution_outcome(completed("null"));
  CHECK(only_text(null) == "(no result)");
  CHECK(structured(null) == R"({"status":"completed","result":null,"logs":[]})");
  auto empty = format_execution_outcome(completed(R"("")"));
  CHECK(only_text(empty) == "(no result)");
  CHECK(structured(empty) == R"({"status":"completed","result":"","logs":[]})");
  // Not nothing: 0, false, [] and {}.
  CHECK(only_text(format_execution_outcome(completed("0"))) == "0");
  CHECK(only_text(format_execution_outcome(completed("false"))) == "false");
}

TEST_CASE("execution outcome: no return value but emitted items") {
  ExecutionOutcome o = completed(std::nullopt);
  o.emitted_json = {R"("one")", R"({"n":2})"};
  auto doc = parse(format_execution_outcome(o));
  REQUIRE(doc["content"].Size() == 3);
  CHECK(text_of(doc, 2) == "(no return value; 2 items emitted to the user)");
  o.emitted_json = {R"("one")"};
  o.result_json = "null";
  doc = parse(format_execution_outcome(o));
  REQUIRE(doc["content"].Size() == 2);
  CHECK(text_of(doc, 1) == "(no return value; 1 item emitted to the user)");
}

TEST_CASE("execution outcome: logs follow the result after a blank line") {
  ExecutionOutcome o = completed("42");
  o.logs = {"[log] a", "[warn] b"};
  auto r = format_execution_outcome(o);
  CHECK(only_text(r) == "42\n\nLogs:\n[log] a\n[warn] b");
  CHECK(structured(r) == R"({"status":"completed","result":42,"logs":["[log] a","[warn] b"]})");
  CHECK_FALSE(parse(r)["isError"].GetBool());
  o.result_json.reset();
  CHECK(only_text(format_execution_outcome(o)) == "(no result)\n\nLogs:\n[log] a\n[warn] b");
}

TEST_CASE("execution outcome: an error, with and without logs") {
  auto plain = format_execution_outcome(failed("boom"));
  CHECK(plain.json == R"({"content":[{"type":"text","text":"Error: boom"}],"isError":true,)"
                      R"("structuredContent":{"status":"error","error":"boom","logs":[]}})");
  ExecutionOutcome o = failed("TypeError: x is not a function");
  o.logs = {"[log] start", "[error] oops"};
  o.result_json = "1";  // ignored for an error
  auto r = format_execution_outcome(o);
  CHECK(only_text(r) ==
        "Error: TypeError: x is not a function\n\nLogs:\n[log] start\n[error] oops");
  CHECK(parse(r)["isError"].GetBool());
  CHECK(
      structured(r) ==
      R"({"status":"error","error":"TypeError: x is not a function","logs":["[log] start","[error] oops"]})");
  // The whole error text, logs included, is capped.
  ExecutionOutcome long_error = failed(repeat("e", kMaxResultTextChars));
  long_error.logs = {"[log] 1234"};
  CHECK(only_text(format_execution_outcome(long_error)) ==
        "Error: " + repeat("e", kMaxResultTextChars - 7) + "\n... [truncated 25 chars]");
}

TEST_CASE("execution outcome: emitted content blocks pass through as they are") {
  ExecutionOutcome o = completed(R"("done")");
  o.emitted_json = {
      R"({"type":"text","text":"hi","annotations":{"audience":["user"]},"_meta":{"k":1}})",
      R"({"type":"image","data":"AA==","mimeType":"image/png"})",
      R"({"type":"resource","resource":{"uri":"x://y","text":"t"}})",
      R"({"type":"resource_link","uri":"x://z","name":"z","size":3})",
      R"({"type":"audio","data":"AA=="})",  // no mimeType: not a block, shown as JSON
  };
  auto r = format_execution_outcome(o);
  auto doc = parse(r);
  REQUIRE(doc["content"].Size() == 6);
  CHECK(compact(block(doc, 0)) ==
        R"({"type":"text","text":"hi","annotations":{"audience":["user"]},"_meta":{"k":1}})");
  CHECK(compact(block(doc, 1)) == R"({"type":"image","data":"AA==","mimeType":"image/png"})");
  CHECK(compact(block(doc, 2)) == R"({"type":"resource","resource":{"uri":"x://y","text":"t"}})");
  CHECK(compact(block(doc, 3)) == R"({"type":"resource_link","uri":"x://z","name":"z","size":3})");
  CHECK(text_of(doc, 4) == "{\n  \"type\": \"audio\",\n  \"data\": \"AA==\"\n}");
  CHECK(text_of(doc, 5) == "done");
  CHECK_FALSE(doc["isError"].GetBool());
}

TEST_CASE("execution outcome: emitted files") {
  ExecutionOutcome o = completed(std::nullopt);
  o.emitted_json = {
      R"({"type":"file","name":"a.png","mimeType":"image/png","data":"iVBORw0KGgo="})",
      R"({"type":"file","name":"b.wav","mimeType":"audio/wav","data":"UklGRg=="})",
      R"({"type":"file","name":"n.txt","mimeType":"text/plain","text":"h\u00e9llo"})",
      R"({"type":"file","name":"d.json","mimeType":"Application/JSON; charset=utf-8","data":"eyJhIjoxfQ"})",
      R"({"type":"file","name":"my file.bin","mimeType":"application/octet-stream","data":"AAEC/w=="})",
  };
  auto doc = parse(format_execution_outcome(o));
  REQUIRE(doc["content"].Size() == 11);
  CHECK(text_of(doc, 0) == "File output: a.png (image/png, 8 bytes)");
  CHECK(compact(block(doc, 1)) ==
        R"({"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"})");
  CHECK(text_of(doc, 2) == "File output: b.wav (audio/wav, 4 bytes)");
  CHECK(compact(block(doc, 3)) == R"({"type":"audio","data":"UklGRg==","mimeType":"audio/wav"})");
  CHECK(text_of(doc, 4) == "File output: n.txt (text/plain, 6 bytes)");
  CHECK(text_of(doc, 5) == "h\xc3\xa9llo");
  // Textual data is decoded (unpadded base64 is accepted, as atob does).
  CHECK(text_of(doc, 6) == "File output: d.json (Application/JSON; charset=utf-8, 7 bytes)");
  CHECK(text_of(doc, 7) == R"({"a":1})");
  CHECK(text_of(doc, 8) == "File output: my file.bin (application/octet-stream, 4 bytes)");
  CHECK(
      compact(block(doc, 9)) ==
      R"({"type":"resource","resource":{"uri":"file:///my%20file.bin","mimeType":"application/octet-stream","blob":"AAEC/w=="}})");
  CHECK(text_of(doc, 10) == "(no return value; 5 items emitted to the user)");
  // The emitted values themselves are in structuredContent, as given.
  CHECK(
      compact(doc["structuredContent"]["emitted"][4]) ==
      R"({"type":"file","name":"my file.bin","mimeType":"application/octet-stream","data":"AAEC/w=="})");
}

TEST_CASE("execution outcome: emitted text files are capped, bad files are plain values") {
  ExecutionOutcome o = completed(R"("r")");
  o.emitted_json = {
      R"({"type":"file","name":"big.txt","mimeType":"text/plain","text":")" +
          repeat("x", kMaxEmittedTextChars + 3) + "\"}",
      // Not base64: shown as the value it is.
      R"({"type":"file","name":"bad.png","mimeType":"image/png","data":"@@@"})",
      // Neither data nor text.
      R"({"type":"file","name":"c","mimeType":"text/plain"})",
  };
  auto doc = parse(format_execution_outcome(o));
  REQUIRE(doc["content"].Size() == 5);
  CHECK(text_of(doc, 0) == "File output: big.txt (text/plain, 64003 bytes)");
  CHECK(text_of(doc, 1) == repeat("x", kMaxEmittedTextChars) + "\n... [truncated 3 chars]");
  CHECK(text_of(doc, 2) ==
        "{\n  \"type\": \"file\",\n  \"name\": \"bad.png\",\n  \"mimeType\": \"image/png\",\n"
        "  \"data\": \"@@@\"\n}");
  CHECK(text_of(doc, 3) ==
        "{\n  \"type\": \"file\",\n  \"name\": \"c\",\n  \"mimeType\": \"text/plain\"\n}");
  CHECK(text_of(doc, 4) == "r");
}

TEST_CASE("execution outcome: emitted plain values") {
  ExecutionOutcome o = completed("[1]");
  o.emitted_json = {R"("a note")", R"({"x":1,"y":[true]})", "3.5", "null",
                    '"' + repeat("s", kMaxEmittedTextChars + 1) + '"'};
  auto doc = parse(format_execution_outcome(o));
  REQUIRE(doc["content"].Size() == 6);
  CHECK(text_of(doc, 0) == "a note");
  CHECK(text_of(doc, 1) == "{\n  \"x\": 1,\n  \"y\": [\n    true\n  ]\n}");
  CHECK(text_of(doc, 2) == "3.5");
  CHECK(text_of(doc, 3) == "null");
  CHECK(text_of(doc, 4) == repeat("s", kMaxEmittedTextChars) + "\n... [truncated 1 chars]");
  CHECK(text_of(doc, 5) == "[\n  1\n]");
}

TEST_CASE("execution outcome: structured content with emitted items") {
  ExecutionOutcome o = completed(R"({"ok":true})");
  o.emitted_json = {R"("a")", R"({"type":"text","text":"b"})"};
  o.logs = {"[log] x"};
  auto r = format_execution_outcome(o);
  CHECK(r.json ==
        R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"},)"
        R"({"type":"text","text":"{\n  \"ok\": true\n}\n\nLogs:\n[log] x"}],"isError":false,)"
        R"("structuredContent":{"status":"completed","result":{"ok":true},)"
        R"("emitted":["a",{"type":"text","text":"b"}],"logs":["[log] x"]}})");
  ExecutionOutcome e = failed("bad");
  e.emitted_json = {"1"};
  auto doc = parse(format_execution_outcome(e));
  REQUIRE(doc["content"].Size() == 2);
  CHECK(text_of(doc, 0) == "1");
  CHECK(text_of(doc, 1) == "Error: bad");
  CHECK(doc["isError"].GetBool());
  CHECK(compact(doc["structuredContent"]) ==
        R"({"status":"error","error":"bad","emitted":[1],"logs":[]})");
}

TEST_CASE("execution outcome: malformed input is shown as raw text, never fatal") {
  auto r = format_execution_outcome(completed("{oops"));
  CHECK(only_text(r) == "{oops");
  CHECK(structured(r) == R"({"status":"completed","result":"{oops","logs":[]})");
  ExecutionOutcome o = completed(std::nullopt);
  o.emitted_json = {"not json", ""};
  auto doc = parse(format_execution_outcome(o));
  REQUIRE(doc["content"].Size() == 3);
  CHECK(text_of(doc, 0) == "not json");
  CHECK(text_of(doc, 1) == "");
  CHECK(compact(doc["structuredContent"]["emitted"]) == R"(["not json",""])");
  // Nesting deeper than dorm parses is shown as its text.
  std::string deep = repeat("[", 200) + repeat("]", 200);
  CHECK(only_text(format_execution_outcome(completed(deep))) == deep);
  // Bytes that are not UTF-8 become U+FFFD, so the result is always valid JSON.
  ExecutionOutcome bad = failed("bad \xff byte");
  bad.logs = {"[log] \xc3"};
  CHECK(only_text(format_execution_outcome(bad)) ==
        "Error: bad \xef\xbf\xbd"
        " byte\n\nLogs:\n[log] \xef\xbf\xbd");
}

TEST_CASE("paused execution: text lines and structured content") {
  PausedExecution p;
  p.execution_id = "exec_0f8e";
  p.now_ms = 1796157761000 - 240'000;  // the deadline is 2026-12-01T20:42:41.000Z
  p.ttl_ms = 240'000;
  p.message = "Approve calling counter_increment?";
  p.instructions = "Call resume with executionId \"exec_0f8e\" and action \"accept\".";
  p.address = "counter_increment";
  p.args_json = R"({ "by": 2, "tags": ["a"] })";
  p.requested_schema_json = R"({"type":"object","properties":{}})";
  auto r = format_paused_execution(p);
  auto doc = parse(r);
  CHECK_FALSE(doc["isError"].GetBool());
  REQUIRE(doc["content"].Size() == 1);
  CHECK(text_of(doc, 0) ==
        "Execution paused: Approve calling counter_increment?\n"
        "executionId: exec_0f8e\n"
        "tool: counter_increment\n"
        "args: {\"by\":2,\"tags\":[\"a\"]}\n"
        "resumeDeadline: 2026-12-01T20:42:41.000Z (4 minutes approval window)\n"
        "instructions: Call resume with executionId \"exec_0f8e\" and action \"accept\".");
  CHECK(compact(doc["structuredContent"]) ==
        R"({"status":"waiting_for_interaction","executionId":"exec_0f8e",)"
        R"("expiresAt":"2026-12-01T20:42:41.000Z","ttlMs":240000,"interaction":{"kind":"form",)"
        R"("message":"Approve calling counter_increment?",)"
        R"("instructions":"Call resume with executionId \"exec_0f8e\" and action \"accept\".",)"
        R"("address":"counter_increment","args":{"by":2,"tags":["a"]},)"
        R"("requestedSchema":{"type":"object","properties":{}}}})");

  p.ttl_ms = 2'000;
  p.now_ms = 1796157761000 - 2'000;
  p.approval_url = "https://dorm.example/resume/exec_0f8e";
  doc = parse(format_paused_execution(p));
  auto text = text_of(doc, 0);
  CHECK(text.find("\nresumeDeadline: 2026-12-01T20:42:41.000Z (2 seconds approval window)\n") !=
        std::string::npos);
  CHECK(text.ends_with("\napprovalUrl: https://dorm.example/resume/exec_0f8e"));
  CHECK(std::string(doc["structuredContent"]["approvalUrl"].GetString()) ==
        "https://dorm.example/resume/exec_0f8e");
  CHECK(doc["structuredContent"]["ttlMs"].GetInt64() == 2'000);
}

TEST_CASE("paused execution: malformed arguments and schema") {
  PausedExecution p;
  p.execution_id = "exec_1";
  p.ttl_ms = 60'000;
  p.message = "m";
  p.instructions = "i";
  p.address = "t";
  p.args_json = "by=2";
  p.requested_schema_json = "[1]";
  auto doc = parse(format_paused_execution(p));
  CHECK(text_of(doc, 0) ==
        "Execution paused: m\nexecutionId: exec_1\ntool: t\nargs: \"by=2\"\n"
        "resumeDeadline: 1970-01-01T00:01:00.000Z (1 minute approval window)\n"
        "requestedSchema: not a JSON object, sent as {}\ninstructions: i");
  CHECK(compact(doc["structuredContent"]["interaction"]["args"]) == R"("by=2")");
  CHECK(compact(doc["structuredContent"]["interaction"]["requestedSchema"]) == "{}");
}

TEST_CASE("paused execution: approval window wording and times") {
  CHECK(format_ttl(240'000) == "4 minutes");
  CHECK(format_ttl(60'000) == "1 minute");
  CHECK(format_ttl(90'000) == "90 seconds");
  CHECK(format_ttl(2'000) == "2 seconds");
  CHECK(format_ttl(1'000) == "1 second");
  // Rounded to whole seconds first, as the original does, and at least one.
  CHECK(format_ttl(59'600) == "1 minute");
  CHECK(format_ttl(1'499) == "1 second");
  CHECK(format_ttl(1'500) == "2 seconds");
  CHECK(format_ttl(0) == "1 second");
  CHECK(format_ttl(-5'000) == "1 second");

  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00.000Z");
  CHECK(iso8601_utc(1796157761000) == "2026-12-01T20:42:41.000Z");
  CHECK(iso8601_utc(951'782'400'123) == "2000-02-29T00:00:00.123Z");
  CHECK(iso8601_utc(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(iso8601_utc(INT64_MAX) == "9999-12-31T23:59:59.999Z");
  CHECK(iso8601_utc(INT64_MIN) == "0000-01-01T00:00:00.000Z");
  // A deadline past the end of int64 is clamped, not overflowed.
  PausedExecution p;
  p.now_ms = INT64_MAX - 10;
  p.ttl_ms = 240'000;
  p.args_json = "{}";
  p.requested_schema_json = "{}";
  auto doc = parse(format_paused_execution(p));
  CHECK(std::string(doc["structuredContent"]["expiresAt"].GetString()) ==
        "9999-12-31T23:59:59.999Z");
}

TEST_CASE("resume unavailable: each status") {
  auto not_found = format_resume_unavailable(ResumeUnavailable::execution_not_found, "exec_1", 0);
  CHECK(only_text(not_found) ==
        "Cannot resume exec_1: execution_not_found. No paused execution has this id (its window "
        "passed, or it never existed): to recover, run the execute tool again with the original "
        "code; if it pauses, use the fresh executionId it gets.");
  CHECK(parse(not_found)["isError"].GetBool());
  CHECK(structured(not_found) ==
        R"({"status":"execution_not_found","executionId":"exec_1","recovery":"re_execute"})");

  auto expired = format_resume_unavailable(ResumeUnavailable::execution_expired, "exec_2", 240'000);
  CHECK(only_text(expired) ==
        "Cannot resume exec_2: execution_expired. Its approval window of 4 minutes has passed: "
        "to recover, run the execute tool again with the original code; if it pauses, use the "
        "fresh executionId it gets.");
  CHECK(parse(expired)["isError"].GetBool());
  CHECK(
      structured(expired) ==
      R"({"status":"execution_expired","executionId":"exec_2","ttlMs":240000,"recovery":"re_execute"})");

  auto forbidden = format_resume_unavailable(ResumeUnavailable::execution_forbidden, "exec_3", 1);
  CHECK(only_text(forbidden) ==
        "Cannot resume exec_3: execution_forbidden. It belongs to another user: only the account "
        "that started the execution can resume it.");
  CHECK(parse(forbidden)["isError"].GetBool());
  CHECK(structured(forbidden) == R"({"status":"execution_forbidden","executionId":"exec_3"})");

  auto settled =
      format_resume_unavailable(ResumeUnavailable::execution_already_settled, "exec_4", 1);
  CHECK(only_text(settled) ==
        "Cannot resume exec_4: execution_already_settled. It has finished already and its result "
        "is not kept for replay: run the execute tool again only if the result is still needed.");
  CHECK(parse(settled)["isError"].GetBool());
  CHECK(structured(settled) ==
        R"({"status":"execution_already_settled","executionId":"exec_4","recovery":"re_execute"})");

  CHECK(to_string(ResumeUnavailable::execution_not_found) == "execution_not_found");
  CHECK(to_string(ResumeUnavailable::execution_expired) == "execution_expired");
  CHECK(to_string(ResumeUnavailable::execution_forbidden) == "execution_forbidden");
  CHECK(to_string(ResumeUnavailable::execution_already_settled) == "execution_already_settled");
}

TEST_CASE("internal error: names only the correlation id") {
  CHECK(
      format_internal_error("0a1b2c3d").json ==
      R"({"content":[{"type":"text","text":"Error: Internal tool error [0a1b2c3d]"}],)"
      R"("isError":true,"structuredContent":{"status":"error","error":"Internal tool error [0a1b2c3d]"}})");
}
