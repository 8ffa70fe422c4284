// What HttpServer offers GET /metrics: local routes (answered on the I/O thread, with the
// peer's address and no body), responses counted by status, and open streams counted.
// The client is a plain socket writing HTTP/1.1 by hand, one request per connection.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <string>

#include "dorm/mcp/http_server.hpp"

using dorm::mcp::HttpRequest;
using dorm::mcp::HttpResponse;
using dorm::mcp::HttpServer;
using dorm::mcp::Respond;
using dorm::mcp::StreamBody;

namespace {

std::unique_ptr<HttpServer> start(HttpServer::Options options) {
  options.listen = {"127.0.0.1", 0};
  options.io_threads = 1;
  auto server = HttpServer::start(options);
  REQUIRE(server.ok());
  return std::move(server).value();
}

// A connection to 127.0.0.1:port whose reads give up after 10 s.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { close(fd_); }

  void send(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }

  // Reads until `marker` has arrived (or the connection ends or a read times out).
  std::string read_until(const std::string& marker) {
    while (received_.find(marker) == std::string::npos) {
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      received_.append(buf, static_cast<std::size_t>(n));
    }
    return received_;
  }

  // Everything until the server closes the connection.
  std::string read_all() { return read_until(std::string(1, '\0') + "never"); }

 private:
  int fd_;
  std::string received_;
};

// One request with `Connection: close`; the whole response.
std::string request(std::uint16_t port, const std::string& method, const std::string& target,
                    const std::string& extra_headers = {}) {
  RawClient c(port);
  c.send(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
         extra_headers + "\r\n");
  return c.read_all();
}

std::map<int, std::uint64_t> by_status(const HttpServer& server) {
  std::map<int, std::uint64_t> out;
  for (auto [code, n] : server.responses_by_status()) out[code] = n;
  return out;
}

}  // namespace

TEST_CASE(
    "http server metrics: a local route answers on its own path with the peer's address, never "
    "reading a body") {
  std::promise<HttpRequest> seen;
  HttpServer::Options options;
  options.local_routes.push_back(
      {"/metrics", [&seen](const HttpRequest& head) {
         seen.set_value(head);
         return HttpResponse{200, {{"Content-Type", "text/plain"}}, "counted\n"};
       }});
  bool handler_called = false;
  auto server = start(options);
  server->set_handler([&handler_called](HttpRequest, Respond respond) {
    handler_called = true;
    respond(HttpResponse{500});
  });
  const auto port = server->local_address().port;

  auto response = request(port, "GET", "/metrics?ignored=1", "X-Probe: yes\r\n");
  CHECK(response.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(response.ends_with("\r\n\r\ncounted\n"));
  auto head = seen.get_future().get();
  CHECK(head.method == "GET");
  CHECK(head.target == "/metrics?ignored=1");
  CHECK(head.header("x-probe") == "yes");
  CHECK(head.peer == "127.0.0.1");
  CHECK(head.peer_loopback);
  CHECK_FALSE(handler_called);

  // Only the exact path: a longer one is not the route (and, not the endpoint, is 404).
  CHECK(request(port, "GET", "/metrics/more").starts_with("HTTP/1.1 404"));
}

TEST_CASE(
    "http server metrics: responses are counted by status, streamed ones too; open streams are "
    "counted while they last") {
  std::promise<std::shared_ptr<StreamBody>> streaming;
  HttpServer::Options options;
  options.local_routes.push_back({"/teapot", [](const HttpRequest&) {
                                    return HttpResponse{418, {}, "short and stout\n"};
                                  }});
  auto server = start(options);
  server->set_handler([&streaming](HttpRequest, Respond respond) {
    auto body = std::make_shared<StreamBody>();
    body->write("data: first\n\n");
    HttpResponse r{200, {{"Content-Type", "text/event-stream"}}};
    r.stream = body;
    respond(std::move(r));
    streaming.set_value(body);
  });
  const auto port = server->local_address().port;
  CHECK(server->responses_by_status().empty());
  CHECK(server->open_streams() == 0);

  CHECK(request(port, "GET", "/healthz").starts_with("HTTP/1.1 200"));
  CHECK(request(port, "GET", "/nowhere").starts_with("HTTP/1.1 404"));
  CHECK(request(port, "GET", "/nowhere").starts_with("HTTP/1.1 404"));
  CHECK(request(port, "GET", "/teapot").starts_with("HTTP/1.1 418"));
  auto counts = by_status(*server);
  CHECK(counts == std::map<int, std::uint64_t>{{200, 1}, {404, 2}, {418, 1}});

  // A streamed response counts once its head is out, and is open until its body ends.
  RawClient c(port);
  c.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(c.read_until("data: first").find("data: first") != std::string::npos);
  auto body = streaming.get_future().get();
  CHECK(server->open_streams() == 1);
  CHECK(by_status(*server)[200] == 2);
  std::promise<void> closed;
  body->on_closed([&closed] { closed.set_value(); });
  body->end();
  // The count drops before the body is closed, so once closed it is down.
  REQUIRE(closed.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(server->open_streams() == 0);
}
