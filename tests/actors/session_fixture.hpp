// What the MCP session tests share: a runtime on virtual time with the session namespace
// and the "testing" fixtures, calls built from JSON text, and readers for SSE bodies.
#pragma once

#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/event_id.hpp"
#include "dorm/runtime/keys.hpp"
#include "runtime_fixture.hpp"

namespace dorm::testing {

using dorm::mcp::HttpResponse;
using dorm::mcp::Identity;
using dorm::mcp::SessionCall;

inline std::vector<mcp::Message> messages(std::string_view body, bool* batch = nullptr) {
  auto parsed = mcp::parse_body(body);
  REQUIRE(std::holds_alternative<mcp::ParsedBody>(parsed));
  auto& ok = std::get<mcp::ParsedBody>(parsed);
  if (batch) *batch = ok.batch;
  return ok.messages;
}

struct SessionFixture : RuntimeFixture {
  actors::McpSessionOptions options;
  mcp::ToolRegistry tools;
  const Identity alice{"alice", "acme"};

  // register_now: false leaves add_namespace() to the caller (to set options first).
  explicit SessionFixture(bool register_now = true) {
    REQUIRE(actors::register_fixtures(tools, "testing").ok());
    options.tools = &tools;
    options.page_size = 2;
    if (register_now) add_namespace();
  }
  void add_namespace() { REQUIRE(actors::register_mcp_session(*runtime, options).ok()); }
  void restart() {
    stop();
    start();
    add_namespace();
  }

  // Sends the call; `answer` is set once the session responds.
  void send(SessionCall c, std::shared_ptr<std::optional<HttpResponse>> answer) {
    auto handle = runtime->get(runtime->id_from_name(actors::kMcpSessionNamespace, c.session_id));
    REQUIRE(handle.ok());
    c.responder = std::make_shared<mcp::Responder>([answer](HttpResponse r) { *answer = std::move(r); });
    runtime->send(*handle, std::move(c));
  }

  HttpResponse call(SessionCall c) {
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    send(std::move(c), answer);
    runtime->run_until_idle();
    REQUIRE(answer->has_value());
    return **answer;
  }

  HttpResponse initialize(const std::string& session, std::string_view version = "2025-11-25",
                          Identity who = {"alice", "acme"},
                          std::string_view capabilities = R"({"sampling":{}})") {
    SessionCall c;
    c.kind = SessionCall::Kind::initialize;
    c.session_id = session;
    c.caller = std::move(who);
    c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" +
                          std::string(version) +
                          R"(","capabilities":)" + std::string(capabilities) +
                          R"(,"clientInfo":{"name":"t","version":"1"}}})");
    return call(std::move(c));
  }

  HttpResponse post(const std::string& session, std::string_view body, Identity who = {"alice", "acme"}) {
    SessionCall c;
    c.kind = SessionCall::Kind::post;
    c.session_id = session;
    c.caller = std::move(who);
    c.messages = messages(body, &c.batch);
    return call(std::move(c));
  }

  HttpResponse simple(SessionCall::Kind kind, const std::string& session, Identity who = {"alice", "acme"}) {
    SessionCall c;
    c.kind = kind;
    c.session_id = session;
    c.caller = std::move(who);
    return call(std::move(c));
  }
};

inline std::string header(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return {};
}


// The JSON-RPC messages of an SSE body.
inline std::vector<rapidjson::Document> events(const HttpResponse& r) {
  std::vector<rapidjson::Document> out;
  std::size_t at = 0;
  while ((at = r.body.find("data: ", at)) != std::string::npos) {
    auto end = r.body.find('\n', at);
    if (end == at + 6) {  // the priming event's empty data
      at = end;
      continue;
    }
    out.emplace_back();
    out.back().Parse(r.body.substr(at + 6, end - at - 6).c_str());
    REQUIRE_FALSE(out.back().HasParseError());
    at = end;
  }
  return out;
}

inline std::string text_of(const rapidjson::Document& response) {
  return response["result"]["content"][0]["text"].GetString();
}



// The id of the first event of an SSE body with the given seq, if any.
inline std::optional<mcp::EventId> event_id(const HttpResponse& r, std::uint64_t seq) {
  std::size_t at = 0;
  while ((at = r.body.find("id: ", at)) != std::string::npos) {
    auto end = r.body.find('\n', at);
    auto id = mcp::parse_event_id(r.body.substr(at + 4, end - at - 4));
    if (id && id->seq == seq) return id;
    at = end;
  }
  return std::nullopt;
}

inline std::size_t count_prefix(storage::MemoryBackend& memory, const std::string& prefix) {
  auto rows = memory.scan(storage::ScanOptions::with_prefix(prefix));
  REQUIRE(rows.ok());
  return rows->size();
}


// What a client reading a streamed response sees: read() moves what the session's sink
// wrote into the response's body (as a connection would send it) and closes the stream
// once it ended or was aborted, as its connection would.
struct StreamState {
  bool over = false;     // the response is finished (ended or aborted)
  bool aborted = false;  // the connection was cut instead of ending cleanly
};
inline StreamState read(HttpResponse& r) {
  if (!r.stream) return {true, false};
  auto pending = r.stream->take();
  r.body += pending.bytes;
  r.stream->sent(pending.bytes.size());
  if (pending.end || pending.abort) r.stream->close();
  return {r.stream->closed(), pending.abort};
}

}  // namespace dorm::testing
