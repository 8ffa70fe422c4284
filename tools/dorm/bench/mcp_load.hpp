// McpLoad: the load generator of `dorm bench mcp`. It drives one MCP server over loopback
// the way many independent clients would: N kept-alive HTTP/1.1 connections, each its own
// MCP session (initialize, notifications/initialized), then `tools/call echo` back to back
// on every connection, one call at a time each. A response is read whole and parsed
// whether the server framed it as JSON or as an SSE stream (a priming event and the
// result, or just the result); a call counts only if its result echoes the text sent.
//
// Every coroutine runs on the executor given, one thread: the same client for every
// server measured, so what differs between runs is the server. Boost.Beast is compiled in
// mcp_load.cpp alone.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dorm::bench::mcp_load {

struct LoadOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  int connections = 16;
  // Calls before the measured span (not counted), then the measured span itself.
  std::chrono::milliseconds warmup{2000};
  std::chrono::milliseconds measure{10'000};
  // Calls completed are also counted per window of this length (flatness over time).
  std::chrono::milliseconds window{10'000};
  // Bound on each exchange (connect, initialize, every call): longer counts as a failure.
  std::chrono::milliseconds timeout{30'000};
  // Called on the executor's thread as the measured span starts, as each whole window
  // of it ends, and as the span ends (for readings such as the server's CPU time); any
  // may be empty.
  std::function<void()> span_started;
  std::function<void()> window_ended;
  std::function<void()> span_ended;
};

struct LoadResult {
  // Latency (request written to response parsed) of every call that completed inside the
  // measured span, in milliseconds; their count over the span's length is the rate.
  std::vector<double> latencies_ms;
  // Calls completed in each whole window of the span (a last partial window is dropped).
  std::vector<std::int64_t> window_calls;
  double seconds = 0;  // the measured span
  std::int64_t failures = 0;
  std::string first_failure;  // what went wrong first, when failures > 0

  double calls_per_second() const {
    return seconds > 0 ? static_cast<double>(latencies_ms.size()) / seconds : 0;
  }
};

// Opens the sessions, runs the warm-up and the measured span, closes every connection and
// returns. A connection whose exchange fails is counted and closed; the others go on.
// Returns within about setup + warmup + measure + 2 x timeout.
boost::asio::awaitable<LoadResult> run_load(LoadOptions options);

// Many MCP sessions, each holding its standalone GET stream open (`dorm bench streams`):
// each session is initialized over a connection that is closed after it, and its GET is
// sent on a new connection, as a client's standalone stream has one of its own; the
// stream's bytes (a priming event, keep-alive comments) are read and counted, never kept.
// Opened in two steps so that a benchmark can read the server between them.
struct HoldOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  int sessions = 1000;
  int parallel = 64;  // connections opening at once
  // Bound on each exchange while opening (connect, initialize, the GET's head).
  std::chrono::milliseconds timeout{30'000};
};

class HeldStreams {
 public:
  // Opens the sessions (initialize, notifications/initialized), `parallel` at a time,
  // closing each one's connection after it; a session that fails is counted.
  static boost::asio::awaitable<std::unique_ptr<HeldStreams>> open_sessions(HoldOptions options);
  ~HeldStreams();

  // Connects once more for every open session and sends its GET, then waits until each
  // has its response head (200, text/event-stream) or has failed; the streams then stay
  // open, read, until close().
  boost::asio::awaitable<void> open_streams();
  // Closes every connection and waits (bounded) until every reader has ended.
  boost::asio::awaitable<void> close();

  int sessions_open() const;
  int streams_open() const;  // heads received, not ended since
  std::int64_t failures() const;
  const std::string& first_failure() const;
  // Streams that received at least one byte since the last mark_received().
  int streams_with_bytes() const;
  void mark_received();

  struct Impl;

 private:
  explicit HeldStreams(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace dorm::bench::mcp_load
