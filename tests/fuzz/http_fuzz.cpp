// libFuzzer target: the real HTTP server in this process, as a client on the network meets
// it. Beast's parser, the head checks, the endpoint, the sessions and their streams all run
// as `dorm serve` runs them; only the store is memory.
//
// The server: a dorm::server::Server on 127.0.0.1 with a port the kernel picks, started by
// the first input and stopped at exit, with `memory:` storage, the "testing" fixture tools
// (less `spin`, see add_testing_tools) and the "conformance" set (resources, prompts,
// completion).
//
// An input is raw bytes for up to kMaxConnections connections, one after the other, split
// at each `%%` followed by CRLF (the separator itself is not sent). Before it is
// sent, `$SESSION` becomes the id of a fresh 2025-11-25 session, `$OLDSESSION` that of a
// fresh 2025-03-26 one (which may send JSON-RPC batches), and `$EVENT` the id of the
// priming event of a finished call's stream on the `$SESSION` session (a real Last-Event-ID). The
// sessions are made for the input and deleted after it, so inputs do not depend on each
// other. Each segment goes on a fresh connection whose sending side then closes, and what
// comes back is read until the server closes or kSegmentBound passes.
//
// A finding (__builtin_trap, after a line on stderr):
//  - what came back is not a sequence of well-formed HTTP responses (the last one may be cut
//    short: a stream ends when its client goes away);
//  - a response is 500: the server failed on its own side, which no client input may cause;
//  - the health check fails: a valid `initialize` on a new connection must get 200. It runs
//    after every input that got a response, and after every kHealthEvery-th input;
//  - a session the harness needs cannot be made (the same check, before the input).
#include <rapidjson/document.h>
#include <spdlog/common.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/actors/fixtures.hpp"
#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/server/server.hpp"
#include "http_wire.hpp"

namespace {

using namespace dorm;
using fuzz::Exchange;
using fuzz::Reading;

constexpr std::size_t kMaxConnections = 4;
constexpr std::string_view kSeparator = "%%\r\n";
// One connection's bytes are sent and answered within this, or the reading stops.
constexpr auto kSegmentBound = std::chrono::milliseconds(2000);
// The harness's own requests (sessions, health): generous, as ASan on a busy machine is slow.
constexpr auto kHarnessBound = std::chrono::milliseconds(20'000);
constexpr auto kStartBound = std::chrono::seconds(60);
constexpr std::uint64_t kHealthEvery = 16;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_http: %s\n", what.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// The "testing" fixtures without `spin`: it holds a CAF worker busy for up to 60 s, so a
// few inputs calling it starve every session of workers, and the health check would fail
// for what the tool is for (scheduling tests), not for a fault.
void add_testing_tools(mcp::ToolRegistry& into) {
  mcp::ToolRegistry all;
  if (!actors::register_fixtures(all, "testing").ok()) finding("cannot register the fixtures");
  auto page = all.list(std::nullopt, all.size() + 1);
  rapidjson::Document tools;
  if (!page.ok() || tools.Parse(page.value().tools_json.c_str()).HasParseError()) {
    finding("cannot list the fixtures");
  }
  for (const auto& tool : tools.GetArray()) {
    std::string_view name = tool["name"].GetString();
    if (name == "spin") continue;
    if (!into.add(all.spec(*all.find(name))).ok())
      finding("cannot add fixture " + std::string(name));
  }
}

// The server, running on a thread of its own from the first input until exit.
class LiveServer {
 public:
  LiveServer() {
    // Errors only: a line per request would bury libFuzzer's own output.
    log::configure(log::LogFormat::text, spdlog::level::err);
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.storage = "memory:";
    options.fixtures = {"conformance"};
    options.handle_signals = false;
    options.http_threads = 2;
    options.drain_timeout = std::chrono::milliseconds(0);
    options.shutdown_grace = std::chrono::seconds(60);  // the stop must never exit the process
    options.on_ready = [this](const std::string& url) { ready_.set_value(url); };
    server_ = std::make_unique<server::Server>(std::move(options));
    add_testing_tools(server_->tools());
    status_ = std::async(std::launch::async, [this] { return server_->run(); });
    auto url = ready_.get_future();
    const auto deadline = std::chrono::steady_clock::now() + kStartBound;
    while (url.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      if (status_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        finding("the server did not start: run() returned " + std::to_string(status_.get()));
      }
      if (std::chrono::steady_clock::now() > deadline) finding("the server did not start in time");
    }
    std::string at = url.get();  // http://127.0.0.1:PORT/mcp
    port_ = static_cast<std::uint16_t>(std::stoi(at.substr(at.rfind(':') + 1)));
  }
  ~LiveServer() {
    server_->stop();
    server_->stop();
    status_.wait();
  }
  std::uint16_t port() const { return port_; }

 private:
  std::promise<std::string> ready_;
  std::unique_ptr<server::Server> server_;
  std::future<int> status_;
  std::uint16_t port_ = 0;
};

LiveServer& live() {
  static LiveServer server;
  return server;
}

std::string post(std::string_view headers, std::string_view body) {
  std::string out = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  out += "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n";
  out += headers;
  out += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

// Sends what the harness itself needs; its responses must be well-formed.
fuzz::Response harness_request(const std::string& bytes, const char* what) {
  Exchange got = fuzz::exchange(live().port(), bytes, kHarnessBound);
  if (!got.connected) finding(std::string(what) + ": cannot connect");
  Reading reading = fuzz::read_responses(got, fuzz::request_methods(bytes, 1 << 20));
  if (!reading.problem.empty()) finding(std::string(what) + ": " + reading.problem);
  if (reading.responses.empty() || !reading.responses[0].complete) {
    finding(std::string(what) + ": no complete response within the bound");
  }
  return reading.responses[0];
}

struct Session {
  std::string id;
};

// initialize on a new connection: 200 with a session id, or a finding.
Session initialize(std::string_view version, const char* what) {
  std::string body =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")";
  body += version;
  body += R"(","capabilities":{},"clientInfo":{"name":"fuzz-http","version":"1"}}})";
  auto res = harness_request(post("", body), what);
  if (res.status != 200 || res.session_id.empty()) {
    finding(std::string(what) + ": initialize got " + std::to_string(res.status) +
            (res.session_id.empty() ? " without a session id" : ""));
  }
  return Session{res.session_id};
}

// The priming event's id of a finished call's stream on `session` (2025-11-25): a real
// Last-Event-ID. (initialize's own answer is not a resumable stream: it has no event ids.)
std::string finished_stream_event(const Session& session) {
  auto res = harness_request(
      post(
          "Mcp-Session-Id: " + session.id + "\r\nMCP-Protocol-Version: 2025-11-25\r\n",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"e"}}})"),
      "making a stream to resume");
  std::string id = fuzz::first_event_id(res.body);
  if (res.status != 200 || id.empty()) {
    finding("a call on a fresh session got " + std::to_string(res.status) +
            (id.empty() ? " without an event id" : ""));
  }
  return id;
}

// DELETE; the input may have ended the session already (404), so only the form counts.
void end_session(const Session& session) {
  harness_request("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: " + session.id +
                      "\r\nConnection: close\r\n\r\n",
                  "ending a session");
}

void health_check() {
  end_session(initialize("2025-11-25", "health check"));
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::vector<std::string_view> segments(std::string_view input) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < kMaxConnections) {
    auto at = input.find(kSeparator);
    if (at == std::string_view::npos) break;
    out.push_back(input.substr(0, at));
    input.remove_prefix(at + kSeparator.size());
  }
  out.push_back(input);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::uint64_t inputs = 0;
  const std::uint16_t port = live().port();
  std::string input(reinterpret_cast<const char*>(data), size);

  std::vector<Session> made;
  if (input.find("$OLDSESSION") != std::string::npos) {
    made.push_back(initialize("2025-03-26", "making the input's 2025-03-26 session"));
    replace_all(input, "$OLDSESSION", made.back().id);
  }
  if (input.find("$SESSION") != std::string::npos || input.find("$EVENT") != std::string::npos) {
    made.push_back(initialize("2025-11-25", "making the input's session"));
    replace_all(input, "$SESSION", made.back().id);
    if (input.find("$EVENT") != std::string::npos) {
      replace_all(input, "$EVENT", finished_stream_event(made.back()));
    }
  }

  const std::size_t header_limit = mcp::HttpServer::Options{}.max_header_bytes;
  // DORM_FUZZ_HTTP_TRACE=1: a line per connection with the statuses it got (for writing seeds).
  static const bool trace = std::getenv("DORM_FUZZ_HTTP_TRACE") != nullptr;
  bool answered = false;
  for (std::string_view segment : segments(input)) {
    Exchange got = fuzz::exchange(port, segment, kSegmentBound);
    if (!got.connected) finding("cannot connect to the server");
    Reading reading = fuzz::read_responses(got, fuzz::request_methods(segment, header_limit));
    if (!reading.problem.empty()) finding(reading.problem);
    for (const auto& response : reading.responses) {
      if (response.status == 500) finding("the server answered 500: " + response.body);
    }
    if (trace) {
      std::string statuses;
      for (const auto& r : reading.responses) {
        statuses += ' ' + std::to_string(r.status) + (r.complete ? "" : " (cut)");
        if (r.status >= 400) statuses += " [" + r.body.substr(0, 160) + "]";
      }
      std::fprintf(stderr, "fuzz_http: %zu bytes ->%s%s\n", segment.size(),
                   statuses.empty() ? " no response" : statuses.c_str(),
                   got.closed ? ", closed" : ", bound reached");
    }
    answered = answered || !reading.responses.empty();
  }

  for (const Session& session : made) end_session(session);
  ++inputs;
  if (answered || inputs % kHealthEvery == 0) health_check();
  return 0;
}
