// HttpClient: the HTTP/1.1 side of one simulated MCP client — requests to one address,
// responses whose bodies are read as they arrive (an SSE stream may last minutes), and a
// pool of idle kept-alive connections reused as Node's fetch reuses them.
//
// Reuse matters for what a deploy does to clients: the official SDK client's requests go
// over whatever kept-alive socket its fetch has, so a server that keeps idle connections
// open while it drains gets the client's resume GETs instead of its successor. A pooled
// connection is taken only if the peer has not closed it; one the peer closes later fails
// the request like any lost connection.
//
// Everything runs on the one I/O thread of the executor given at construction; this
// header keeps Boost.Beast out of its includers (only http_client.cpp compiles it).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dorm::deploy_sim {

using Clock = std::chrono::steady_clock;

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/mcp";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// What one read of a body gave: bytes, its end, or why it failed.
struct BodyRead {
  std::string bytes;
  bool done = false;       // the body ended as HTTP frames it (a clean end)
  std::string error;       // the connection failed or the deadline passed; the body is over
  bool timed_out = false;  // the failure was the deadline
};

class HttpConnection;
class HttpClient;

// A response whose header has been read. Destroying it returns a fully read keep-alive
// connection to its client's pool and closes any other.
class HttpResponse {
 public:
  ~HttpResponse();
  HttpResponse(const HttpResponse&) = delete;
  HttpResponse& operator=(const HttpResponse&) = delete;

  int status() const { return status_; }
  // The value of header `name` (case-insensitive), empty when absent.
  std::string header(std::string_view name) const;
  // Whether a body follows the header (a 204 or a Content-Length of 0 has none).
  bool has_body() const { return has_body_; }

  // The next bytes of the body, waiting for them until the request's deadline.
  boost::asio::awaitable<BodyRead> read_some();
  // The rest of the body (at most 4 MiB); an error text when it cannot be read whole.
  boost::asio::awaitable<BodyRead> read_all();

 private:
  friend class HttpClient;
  HttpResponse(HttpClient& client, std::unique_ptr<HttpConnection> connection, int status,
               bool has_body, std::vector<std::pair<std::string, std::string>> headers);

  HttpClient& client_;
  std::unique_ptr<HttpConnection> connection_;
  int status_;
  bool has_body_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

// The outcome of send(): a response, or why none came.
struct HttpAnswer {
  std::unique_ptr<HttpResponse> response;
  std::string error;  // set when response is null: no connection, write failed, no header
  bool timed_out = false;
};

class HttpClient {
 public:
  HttpClient(boost::asio::any_io_executor executor, std::string host, std::uint16_t port);
  ~HttpClient();

  // Sends `request` (Host, User-Agent and Content-Length are added) over a pooled or new
  // connection and reads the response header. Every operation of the exchange, reads of
  // its body included, fails once `deadline` passes. `reuse` false opens a new connection
  // and closes it after the response.
  boost::asio::awaitable<HttpAnswer> send(HttpRequest request, Clock::time_point deadline,
                                          bool reuse = true);

  // Closes every connection, pooled or in use: pending reads and writes end with an error
  // at once. Later sends still work (for a client that goes on after a deploy).
  void close_all();

 private:
  friend class HttpResponse;
  void give_back(std::unique_ptr<HttpConnection> connection);
  std::unique_ptr<HttpConnection> take_idle();

  boost::asio::any_io_executor executor_;
  std::string host_;
  std::uint16_t port_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;
  std::set<HttpConnection*> in_use_;  // so close_all reaches connections responses hold
};

}  // namespace dorm::deploy_sim
