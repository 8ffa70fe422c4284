// McpClient: one simulated MCP client session that behaves, on the wire, like the official
// TypeScript SDK client (1.32.2) with its default options: `initialize`,
// `notifications/initialized`, the standalone GET stream, and tool calls answered on SSE
// streams that are resumed after a drop exactly as dorm/testing/sdk_reconnect.hpp states
// (priming id or GET stream, `retry:` or backoff, two attempts, only a result stops it);
// the McpCluster clients of --virtual follow the same rules on virtual time.
// tests/e2e/deploy_sim.test.mjs runs the same case with the real SDK client and checks
// that both see the same outcomes.
//
// Like the SDK client, it does not re-initialize after a 404, and at its own timeout it
// sends `notifications/cancelled` for the call.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "dorm/testing/call_outcome.hpp"
#include "dorm/testing/sdk_reconnect.hpp"
#include "http_client.hpp"
#include "notifier.hpp"

namespace dorm::deploy_sim {

// What a call reports while it runs (on the I/O thread).
struct CallHooks {
  std::function<void()> accepted;  // the POST got a response header, or failed
  std::function<void(const testing::Outcome&)> settled;  // exactly once
  // Optional: the result's JSON text, just before `settled` reports it answered.
  std::function<void(const std::string& result_json)> result;
};

class McpClient {
 public:
  McpClient(boost::asio::any_io_executor executor, std::string host, std::uint16_t port,
            testing::ReconnectOptions reconnect = {});

  // initialize and notifications/initialized, then the standalone GET stream in the
  // background (as the SDK opens it). Returns an error text, empty on success.
  boost::asio::awaitable<std::string> open(Clock::time_point deadline);

  // tools/call `tool` with `arguments_json` as request `id`. Returns when the call's
  // streams are done by the SDK's rules or its `deadline` (the client timeout) passed;
  // hooks.settled has then been called once: with the response, the POST's failure, or
  // hung when nothing answered by the deadline.
  boost::asio::awaitable<void> call(std::int64_t id, std::string tool, std::string arguments_json,
                                    Clock::time_point deadline, CallHooks hooks);

  // Ends the standalone stream and every wait, closes every connection.
  void close();
  // Closes every connection as a network failure would, and nothing else: streams that
  // were open resume by the SDK's rules (dorm torture's "resume" step).
  void drop_connections() { http_.close_all(); }
  // Calls and streams of this client still running (0 some moments after close()).
  int running() const { return running_; }
  const std::string& session_id() const { return session_id_; }

 private:
  struct StreamEnd;
  using MessageSink = std::function<void(const std::string& data)>;

  boost::asio::awaitable<StreamEnd> read_stream(HttpResponse& response, bool reconnectable,
                                                const MessageSink& sink);
  boost::asio::awaitable<void> follow(StreamEnd end, Clock::time_point deadline,
                                      const MessageSink& sink);
  boost::asio::awaitable<std::unique_ptr<HttpResponse>> reconnect(
      const std::optional<std::string>& last_event_id, Clock::time_point deadline);
  boost::asio::awaitable<void> standalone_stream();
  boost::asio::awaitable<void> send_cancel(std::int64_t id);
  boost::asio::awaitable<std::string> initialize(Clock::time_point deadline);
  HttpRequest post(std::string body) const;
  HttpRequest get(const std::optional<std::string>& last_event_id) const;

  HttpClient http_;
  testing::ReconnectOptions reconnect_;
  Notifier closing_;
  bool closed_ = false;
  int running_ = 0;
  std::string session_id_;
  std::string protocol_version_;
  std::optional<std::int64_t> server_retry_ms_;  // the last `retry:` seen on any stream
};

}  // namespace dorm::deploy_sim
