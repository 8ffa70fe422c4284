#include "mcp_client.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <variant>

#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/testing/sse_decoder.hpp"
#include "version.hpp"

namespace dorm::deploy_sim {

namespace asio = boost::asio;
using testing::Outcome;
using testing::OutcomeKind;
using testing::ResumeAnswer;
using testing::SseChunk;
using testing::SseDecoder;

namespace {
constexpr const char* kProtocolVersion = "2025-11-25";
// How long the notifications/cancelled of a timed-out call may take to be sent.
constexpr auto kCancelWait = std::chrono::seconds(5);
// The standalone stream lives until close(); this stands for "no deadline".
constexpr auto kForever = std::chrono::hours(24 * 365);

// Counts a coroutine in McpClient::running() for as long as it lives.
struct Running {
  explicit Running(int& n) : n(n) { ++n; }
  ~Running() { --n; }
  int& n;
};

std::vector<mcp::Message> messages_in(std::string_view data) {
  auto parsed = mcp::parse_body(data);
  if (auto* body = std::get_if<mcp::ParsedBody>(&parsed)) return std::move(body->messages);
  return {};
}

// {"name": TOOL, "arguments": ARGUMENTS}; arguments_json is a JSON object's text.
std::string call_params(const std::string& tool, const std::string& arguments_json) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("name");
  w.String(tool.c_str(), static_cast<rapidjson::SizeType>(tool.size()));
  w.Key("arguments");
  w.RawValue(arguments_json.c_str(), arguments_json.size(), rapidjson::kObjectType);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

bool is_event_stream(const HttpResponse& r) {
  return r.header("content-type").starts_with("text/event-stream");
}
}  // namespace

// How a stream ended, as the SDK's _handleSseStream tracks it.
struct McpClient::StreamEnd {
  bool reconnectable = false;
  bool carried_event_id = false;
  std::optional<std::string> last_event_id;
  bool received_result = false;
};

McpClient::McpClient(asio::any_io_executor executor, std::string host, std::uint16_t port,
                     testing::ReconnectOptions reconnect)
    : http_(executor, std::move(host), port), reconnect_(reconnect), closing_(executor) {}

HttpRequest McpClient::post(std::string body) const {
  HttpRequest r{"POST", "/mcp", {}, std::move(body)};
  r.headers = {{"content-type", "application/json"},
               {"accept", "application/json, text/event-stream"}};
  if (!session_id_.empty()) r.headers.emplace_back("mcp-session-id", session_id_);
  if (!protocol_version_.empty()) r.headers.emplace_back("mcp-protocol-version", protocol_version_);
  return r;
}

HttpRequest McpClient::get(const std::optional<std::string>& last_event_id) const {
  HttpRequest r{"GET", "/mcp", {{"accept", "text/event-stream"}}, {}};
  if (!session_id_.empty()) r.headers.emplace_back("mcp-session-id", session_id_);
  if (!protocol_version_.empty()) r.headers.emplace_back("mcp-protocol-version", protocol_version_);
  if (last_event_id) r.headers.emplace_back("last-event-id", *last_event_id);
  return r;
}

asio::awaitable<McpClient::StreamEnd> McpClient::read_stream(HttpResponse& response,
                                                             bool reconnectable,
                                                             const MessageSink& sink) {
  StreamEnd end{reconnectable, false, std::nullopt, false};
  SseDecoder decoder;
  for (;;) {
    BodyRead piece = co_await response.read_some();
    SseChunk chunk = decoder.feed(piece.bytes);
    if (chunk.retry_ms) server_retry_ms_ = chunk.retry_ms;
    for (auto& event : chunk.events) {
      if (event.id && !event.id->empty()) {  // the SDK tests the id for truth: "" is none
        end.last_event_id = event.id;
        end.carried_event_id = true;
      }
      if (event.data.empty() || !(event.event.empty() || event.event == "message")) continue;
      for (const auto& m : messages_in(event.data)) {
        if (m.kind == mcp::Message::Kind::result_response) end.received_result = true;
      }
      sink(event.data);
    }
    if (piece.done || !piece.error.empty()) co_return end;
  }
}

asio::awaitable<std::unique_ptr<HttpResponse>> McpClient::reconnect(
    const std::optional<std::string>& last_event_id, Clock::time_point deadline) {
  for (int attempt = 0; attempt < reconnect_.max_retries; ++attempt) {
    auto at = Clock::now() + std::chrono::milliseconds(testing::reconnect_delay_ms(
                                 reconnect_, attempt, server_retry_ms_));
    if (closed_ || at >= deadline) co_return nullptr;
    co_await closing_.until([this] { return closed_; }, at);
    if (closed_) co_return nullptr;
    HttpAnswer answer = co_await http_.send(get(last_event_id), deadline);
    if (!answer.response) continue;  // no connection or no answer: a failed attempt
    switch (testing::classify_resume(answer.response->status(), answer.response->has_body())) {
      case ResumeAnswer::stream:
        co_return std::move(answer.response);
      case ResumeAnswer::finished:
      case ResumeAnswer::abandoned:
        co_return nullptr;
      case ResumeAnswer::failed:
        continue;
    }
  }
  co_return nullptr;  // the SDK gives up here: whatever the stream still owed never comes
}

asio::awaitable<void> McpClient::follow(StreamEnd end, Clock::time_point deadline,
                                        const MessageSink& sink) {
  while (testing::resumes_after_end(end.reconnectable, end.carried_event_id, end.received_result)) {
    auto resumed = co_await reconnect(end.last_event_id, deadline);
    if (!resumed) co_return;
    // A resumed stream is a GET stream: reconnectable, and its own ids only.
    end = co_await read_stream(*resumed, true, sink);
  }
}

asio::awaitable<void> McpClient::call(std::int64_t id, std::string tool, std::string arguments_json,
                                      Clock::time_point deadline, CallHooks hooks) {
  Running running(running_);
  bool settled = false;
  auto settle = [&](Outcome o) {
    if (settled) return;
    settled = true;
    hooks.settled(o);
  };
  mcp::RequestId request_id(id);
  MessageSink sink = [&](const std::string& data) {
    for (const auto& m : messages_in(data)) {
      if (!m.is_response() || m.id != request_id) continue;
      if (m.kind == mcp::Message::Kind::result_response) {
        if (!settled && hooks.result) hooks.result(m.result);
        settle(Outcome{OutcomeKind::answered, 0, {}});
      } else {
        settle(testing::outcome_of_error(m.error));
      }
    }
  };
  HttpAnswer answer = co_await http_.send(
      post(mcp::request(request_id, "tools/call", call_params(tool, arguments_json))), deadline);
  hooks.accepted();
  if (!answer.response) {
    if (answer.timed_out) {
      settle(Outcome{OutcomeKind::hung, 0, {}});
      co_await send_cancel(id);
    } else {
      settle(Outcome{OutcomeKind::failed, 0, "no response to the POST (" + answer.error + ")"});
    }
    co_return;
  }
  auto& r = *answer.response;
  if (r.status() < 200 || r.status() > 299) {
    settle(Outcome{OutcomeKind::failed, 0, "http_" + std::to_string(r.status())});
  } else if (is_event_stream(r)) {
    StreamEnd end = co_await read_stream(r, false, sink);
    answer.response.reset();
    co_await follow(end, deadline, sink);
  } else if (r.has_body()) {
    BodyRead body = co_await r.read_all();
    sink(body.bytes);
  }
  answer.response.reset();
  if (!settled) {
    co_await closing_.until([this] { return closed_; }, deadline);
    settle(Outcome{OutcomeKind::hung, 0, {}});
    co_await send_cancel(id);
  }
}

// What the SDK client does at its own request timeout: it tells the server it gave up.
// Nothing waits for the answer (202, or nothing from a server that is gone).
asio::awaitable<void> McpClient::send_cancel(std::int64_t id) {
  if (closed_) co_return;
  std::string params = R"({"requestId":)" + std::to_string(id) +
                       R"(,"reason":"McpError: MCP error -32001: Request timed out"})";
  HttpAnswer answer = co_await http_.send(
      post(mcp::notification("notifications/cancelled", params)), Clock::now() + kCancelWait);
  (void)answer;
}

asio::awaitable<std::string> McpClient::initialize(Clock::time_point deadline) {
  std::string params = std::string(R"({"protocolVersion":")") + kProtocolVersion +
                       R"(","capabilities":{},"clientInfo":{"name":"dorm-deploy-sim","version":")" +
                       kVersion + "\"}}";
  HttpAnswer answer =
      co_await http_.send(post(mcp::request(mcp::RequestId(0), "initialize", params)), deadline);
  if (!answer.response) co_return "initialize: " + answer.error;
  auto& r = *answer.response;
  if (r.status() != 200) co_return "initialize: HTTP " + std::to_string(r.status());
  session_id_ = r.header("mcp-session-id");
  BodyRead body = co_await r.read_all();
  if (!body.error.empty()) co_return "initialize: " + body.error;
  std::vector<std::string> datas;
  if (is_event_stream(r)) {
    for (auto& e : SseDecoder().feed(body.bytes).events) datas.push_back(std::move(e.data));
  } else {
    datas.push_back(std::move(body.bytes));
  }
  for (const auto& data : datas) {
    for (const auto& m : messages_in(data)) {
      if (m.kind != mcp::Message::Kind::result_response) continue;
      rapidjson::Document result;
      result.Parse(m.result.c_str());
      if (!result.HasParseError() && result.IsObject() && result.HasMember("protocolVersion") &&
          result["protocolVersion"].IsString()) {
        protocol_version_ = result["protocolVersion"].GetString();
      }
    }
  }
  if (session_id_.empty() || protocol_version_.empty())
    co_return "initialize: no session id or protocol version in the answer";
  co_return std::string();
}

asio::awaitable<std::string> McpClient::open(Clock::time_point deadline) {
  std::string failed = co_await initialize(deadline);
  if (!failed.empty()) co_return failed;
  HttpAnswer note =
      co_await http_.send(post(mcp::notification("notifications/initialized")), deadline);
  if (!note.response) co_return "notifications/initialized: " + note.error;
  if (note.response->status() != 202)
    co_return "notifications/initialized: HTTP " + std::to_string(note.response->status());
  note.response.reset();
  auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, standalone_stream(), asio::detached);
  co_return std::string();
}

// The SDK opens it once after initialization (a failure there is only reported) and then
// keeps it by the same reconnection rules as any GET stream.
asio::awaitable<void> McpClient::standalone_stream() {
  Running running(running_);
  auto deadline = Clock::now() + kForever;
  HttpAnswer answer = co_await http_.send(get(std::nullopt), deadline);
  if (!answer.response || answer.response->status() < 200 || answer.response->status() > 299 ||
      !answer.response->has_body()) {
    co_return;
  }
  MessageSink ignore = [](const std::string&) {};
  StreamEnd end = co_await read_stream(*answer.response, true, ignore);
  answer.response.reset();
  co_await follow(end, deadline, ignore);
}

void McpClient::close() {
  closed_ = true;
  http_.close_all();
  closing_.notify();
}

}  // namespace dorm::deploy_sim
