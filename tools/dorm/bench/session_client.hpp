// SessionClient: drives MCP sessions in process the way the HTTP endpoint does, for
// `dorm bench execute` and `dorm bench runtime`. One SessionCall per POST, the answer through a Responder, a streamed
// answer read to its end as a connection's I/O thread would; no HTTP. With it, the checks
// the benchmark's answers must pass, and the small JSON helpers both use.
#pragma once

#include <rapidjson/document.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "dorm/mcp/session_call.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::bench::execute {

// Ends the benchmark with `what` (caught and logged by `dorm bench`).
[[noreturn]] void fail(const std::string& what);

template <class T>
T must(Result<T> r, const char* what) {
  if (!r) fail(std::string(what) + ": " + r.error().describe());
  return std::move(r).value();
}
void must(Result<void> r, const char* what);

std::string compact(const rapidjson::Value& v);
std::string json_string(const std::string& text);
// `prefix` followed by `n`.
std::string numbered(const char* prefix, long n);
// "[a,b]"
std::string pair_json(long a, long b);

struct Reply {
  double ms = 0;                // send to last byte
  rapidjson::Document message;  // the JSON-RPC response to the call
  std::string body;             // the whole answer, for error messages
};

// Every call is sent alone and waited for; a wrong status, an aborted stream or no answer
// in two minutes ends the benchmark.
class SessionClient {
 public:
  explicit SessionClient(Runtime& runtime) : runtime_(runtime) {}

  void initialize(const std::string& session);
  // A notification (no params) the session must accept with 202.
  void notify(const std::string& session, const std::string& method);

  // tools/call `tool` with `arguments_json`; returns the CallToolResult (and the time).
  Reply call_tool(const std::string& session, const std::string& tool,
                  const std::string& arguments_json);

  Reply execute(const std::string& session, const std::string& code) {
    return call_tool(session, "execute", R"({"code":)" + json_string(code) + "}");
  }

  Reply resume_accept(const std::string& session, const std::string& execution_id) {
    return call_tool(session, "resume",
                     R"({"executionId":)" + json_string(execution_id) + R"(,"action":"accept"})");
  }

 private:
  Reply call(mcp::SessionCall::Kind kind, const std::string& session, const std::string& body,
             std::int64_t id);
  // Sends one POST and waits for its whole answer (time and body into `out`); returns the
  // HTTP status.
  int send(mcp::SessionCall::Kind kind, const std::string& session, const std::string& body,
           Reply& out);

  Runtime& runtime_;
  std::atomic<std::int64_t> next_id_{0};
};

// ---- what the answers must say ----

// The structuredContent of a CallToolResult that is not an error.
const rapidjson::Value& structured(const Reply& r, const char* what);
// An execution that completed with `expected` (compact JSON) as its value.
void expect_completed(const Reply& r, const std::string& expected, const char* what);
// An execution paused for approval; returns its id.
std::string expect_paused(const Reply& r, const char* what);
void expect_echo(const Reply& r, const std::string& text);

}  // namespace dorm::bench::execute
