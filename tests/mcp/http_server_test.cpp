// HttpServer over real loopback sockets, with a synchronous Boost.Beast client.
#include "dorm/mcp/http_server.hpp"

#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "captured_log.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using dorm::mcp::HttpRequest;
using dorm::mcp::HttpResponse;
using dorm::mcp::HttpServer;
using dorm::mcp::Respond;
using dorm::mcp::StreamBody;

namespace {

using dorm::testing::CapturedLog;

std::unique_ptr<HttpServer> start_on_free_port(HttpServer::Options options = {}) {
  options.listen = {"127.0.0.1", 0};
  options.io_threads = 1;
  options.max_body_bytes = 1024;
  auto server = HttpServer::start(options);
  REQUIRE(server.ok());
  return std::move(server).value();
}

// A client connection; one request at a time.
class Client {
 public:
  explicit Client(std::uint16_t port) : socket_(ioc_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }

  http::response<http::string_body> send(http::verb method, const std::string& target,
                                         std::string body = {}) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(socket_, req);
    return read();
  }

  void send_raw(const std::string& bytes) { net::write(socket_, net::buffer(bytes)); }

  tcp::socket& socket() { return socket_; }

  // Sends a request without waiting for the response.
  void send_only(http::request<http::string_body> req) {
    req.prepare_payload();
    http::write(socket_, req);
  }

  // True once the server has closed the connection (a read sees end of stream). The
  // socket's receive timeout bounds the wait.
  bool closed_by_server(std::chrono::seconds bound) {
    timeval tv{static_cast<time_t>(bound.count()), 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char byte;
    boost::system::error_code ec;
    socket_.read_some(net::buffer(&byte, 1), ec);
    return ec == net::error::eof || ec == net::error::connection_reset;
  }

  // Reads and discards until the server's end of stream; false on a read timeout.
  bool drained_then_closed(std::chrono::seconds bound) {
    timeval tv{static_cast<time_t>(bound.count()), 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::vector<char> sink(64 * 1024);
    for (;;) {
      boost::system::error_code ec;
      socket_.read_some(net::buffer(sink), ec);
      if (ec) return ec == net::error::eof || ec == net::error::connection_reset;
    }
  }

  http::response<http::string_body> read() {
    http::response<http::string_body> res;
    http::read(socket_, buffer_, res);
    return res;
  }

  // The next response, or nullopt if none is complete within `bound`.
  std::optional<http::response<http::string_body>> read_within(std::chrono::seconds bound) {
    timeval tv{static_cast<time_t>(bound.count()), 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    http::response<http::string_body> res;
    boost::system::error_code ec;
    http::read(socket_, buffer_, res, ec);
    if (ec) return std::nullopt;
    return res;
  }

  // The response to a HEAD request: its header only (what follows is the next response).
  http::response<http::string_body> read_head_response() {
    http::response_parser<http::string_body> parser;
    parser.skip(true);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

}  // namespace

TEST_CASE("http server: /healthz answers at once, /readyz only after set_ready") {
  auto server = start_on_free_port();
  std::uint16_t port = server->local_address().port;
  CHECK(port != 0);
  Client client(port);
  CHECK(client.send(http::verb::get, "/healthz").result() == http::status::ok);
  CHECK(client.send(http::verb::get, "/readyz").result() == http::status::service_unavailable);
  server->set_ready(true);
  auto ready = client.send(http::verb::get, "/readyz?verbose=1");
  CHECK(ready.result() == http::status::ok);
  CHECK(ready.body() == "ready\n");
  server->set_ready(false);
  CHECK(client.send(http::verb::get, "/readyz").result() == http::status::service_unavailable);
}

TEST_CASE("http server: unknown paths, wrong methods, oversized and malformed requests") {
  auto server = start_on_free_port();
  std::uint16_t port = server->local_address().port;
  Client client(port);
  CHECK(client.send(http::verb::get, "/nope").result() == http::status::not_found);
  auto post = client.send(http::verb::post, "/healthz", "x");
  CHECK(post.result() == http::status::method_not_allowed);
  CHECK(post[http::field::allow] == "GET, HEAD");
  // Still the same keep-alive connection after all of the above.
  CHECK(client.send(http::verb::get, "/healthz").result() == http::status::ok);

  Client big(port);
  CHECK(big.send(http::verb::post, "/healthz", std::string(2048, 'x')).result() ==
        http::status::payload_too_large);

  Client garbage(port);
  garbage.send_raw("NOT HTTP AT ALL\r\n\r\n");
  CHECK(garbage.read().result() == http::status::bad_request);
}

TEST_CASE("http server: a bound port cannot be bound twice; the error names the address") {
  auto server = start_on_free_port();
  HttpServer::Options options;
  options.listen = {"127.0.0.1", server->local_address().port};
  auto second = HttpServer::start(options);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == dorm::ErrorCode::io_error);
  CHECK(second.error().message.find("cannot bind 127.0.0.1:") == 0);
}

TEST_CASE("http server: a Transfer-Encoding other than a lone chunked is refused before the body") {
  auto server = start_on_free_port();
  for (const char* framing : {"Transfer-Encoding: chunked, identity\r\n",
                              "Transfer-Encoding: gzip, chunked\r\n",
                              "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"}) {
    CAPTURE(std::string(framing));
    Client client(server->local_address().port);
    client.send_raw(std::string("POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n") + framing +
                    "\r\n2\r\nhi\r\n0\r\n\r\n");
    auto res = client.read();
    CHECK(res.result() == http::status::bad_request);
    // `chunked, identity` got through before (the others Beast's parser refuses itself).
    if (std::string_view(framing).find("identity") != std::string_view::npos) {
      CHECK(res.body() == "Transfer-Encoding must be exactly 'chunked'\n");
    }
  }
  // A lone chunked is fine (here: the probe's 405, which needs the request read first).
  Client client(server->local_address().port);
  client.send_raw("POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
  CHECK(client.read().result() == http::status::method_not_allowed);
}

TEST_CASE("http server: no answer to HEAD carries a body, on any path, so a pipelined request stays in step") {
  auto server = start_on_free_port();
  server->set_ready(true);
  std::promise<std::shared_ptr<StreamBody>> streamed;
  server->set_handler([&](HttpRequest request, Respond respond) {
    if (request.target == "/mcp?stream") {
      auto body = std::make_shared<StreamBody>();
      HttpResponse res(200, {{"Content-Type", "text/event-stream"}});
      res.stream = body;
      respond(std::move(res));
      return streamed.set_value(body);
    }
    respond(HttpResponse{200, {{"Content-Type", "text/plain"}}, "hello"});
  });
  struct Case {
    const char* target;
    http::status status;
    const char* content_length;
  };
  for (Case c : {Case{"/healthz", http::status::ok, "3"}, Case{"/readyz", http::status::ok, "6"},
                 Case{"/nope", http::status::not_found, "10"}, Case{"/mcp", http::status::ok, "5"},
                 Case{"/mcp?stream", http::status::ok, "0"}}) {
    CAPTURE(c.target);
    Client client(server->local_address().port);
    // Both requests in one write: had the server sent a body after the HEAD's header,
    // those bytes would be read here as the start of the second response.
    client.send_raw(std::string("HEAD ") + c.target +
                    " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    auto head = client.read_head_response();
    CHECK(head.result() == c.status);
    CHECK(head[http::field::content_length] == c.content_length);
    auto next = client.read_within(std::chrono::seconds(10));
    REQUIRE(next);
    CHECK(next->result() == http::status::ok);
    CHECK(next->body() == "ok\n");
  }
  // The stream a handler opened for the HEAD was closed, so its writer learns to stop.
  auto body = streamed.get_future().get();
  CHECK(body->closed());
}

TEST_CASE("http server: check_head refuses an endpoint request before any of its body is read") {
  HttpServer::Options options;
  std::atomic<int> checked{0};
  options.check_head = [&](const HttpRequest& head) -> std::optional<HttpResponse> {
    ++checked;
    CHECK(head.body.empty());
    if (head.header("authorization") == std::optional<std::string_view>("Bearer ok")) {
      return std::nullopt;
    }
    return HttpResponse{401, {{"Content-Type", "text/plain"}}, "who are you?"};
  };
  auto server = start_on_free_port(options);  // body limit 1024
  std::promise<HttpRequest> handled;
  server->set_handler([&](HttpRequest request, Respond respond) {
    handled.set_value(request);
    respond(HttpResponse{200, {}, "done"});
  });
  std::uint16_t port = server->local_address().port;
  const std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";

  SUBCASE("refused with most of its body unsent: under the body limit, and far over it") {
    for (const char* length : {"1000", "10485760"}) {
      CAPTURE(length);
      Client client(port);
      // The server cannot have read a body the client has not sent: it answers from the header.
      client.send_raw(head + "Content-Length: " + length + "\r\n\r\n" + std::string(10, 'x'));
      auto res = client.read_within(std::chrono::seconds(10));
      REQUIRE(res);
      CHECK(res->result() == http::status::unauthorized);
      CHECK(res->body() == "who are you?");
      CHECK_FALSE(res->keep_alive());  // the unread body cannot be skipped in step
      CHECK(client.closed_by_server(std::chrono::seconds(10)));
    }
  }
  SUBCASE("refused without a body: the connection goes on") {
    Client client(port);
    client.send_raw("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    auto res = client.read_within(std::chrono::seconds(10));
    REQUIRE(res);
    CHECK(res->result() == http::status::unauthorized);
    CHECK(res->keep_alive());
    CHECK(client.send(http::verb::get, "/healthz").result() == http::status::ok);
  }
  SUBCASE("let through, a Content-Length over the limit is 413 before the body is sent") {
    Client client(port);
    client.send_raw(head + "Authorization: Bearer ok\r\nContent-Length: 10485760\r\n\r\n");
    auto res = client.read_within(std::chrono::seconds(10));
    REQUIRE(res);
    CHECK(res->result() == http::status::payload_too_large);
    CHECK(res->body() == "request body over the limit of 1024 bytes\n");
  }
  SUBCASE("let through, the body is read and the handler gets it") {
    Client client(port);
    client.send_raw(head + "Authorization: Bearer ok\r\nContent-Length: 5\r\n\r\nhello");
    auto res = client.read_within(std::chrono::seconds(10));
    REQUIRE(res);
    CHECK(res->result() == http::status::ok);
    auto request = handled.get_future().get();
    CHECK(request.body == "hello");
    CHECK(request.header("authorization") == std::optional<std::string_view>("Bearer ok"));
  }
  // Probes and other paths are not the endpoint's: no head check for them.
  int before = checked.load();
  Client probe(port);
  CHECK(probe.send(http::verb::get, "/healthz").result() == http::status::ok);
  CHECK(probe.send(http::verb::get, "/nope").result() == http::status::not_found);
  CHECK(checked.load() == before);
}

TEST_CASE("http server: a header sent on several lines reaches the handler joined, with its line count") {
  auto server = start_on_free_port();
  std::promise<HttpRequest> seen;
  server->set_handler([&](HttpRequest request, Respond respond) {
    seen.set_value(request);
    respond(HttpResponse{204});
  });
  Client client(server->local_address().port);
  client.send_raw("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
                  "X-Other: 1\r\naccept: text/event-stream\r\n\r\n");
  auto res = client.read_within(std::chrono::seconds(10));
  REQUIRE(res);
  CHECK(res->result() == http::status::no_content);
  auto request = seen.get_future().get();
  CHECK(request.header("accept") ==
        std::optional<std::string_view>("application/json, text/event-stream"));
  CHECK(request.header_lines("accept") == 2);
  CHECK(request.header_lines("host") == 1);
  CHECK(request.header_lines("x-missing") == 0);
  REQUIRE(request.headers.size() == 3);  // one field per name, in order of first arrival
  CHECK(request.headers[0].name == "host");
  CHECK(request.headers[1].name == "accept");
  CHECK(request.headers[2].name == "x-other");
}

TEST_CASE("http server: after close_listener the port is free and open connections still work") {
  auto server = start_on_free_port();
  std::uint16_t port = server->local_address().port;
  Client kept(port);
  CHECK(kept.send(http::verb::get, "/healthz").result() == http::status::ok);
  server->close_listener();
  server->close_listener();  // idempotent

  HttpServer::Options options;
  options.listen = {"127.0.0.1", port};
  auto successor = HttpServer::start(options);
  REQUIRE(successor.ok());
  CHECK(kept.send(http::verb::get, "/healthz").result() == http::status::ok);
}

TEST_CASE("http server: a drain closes an idle kept-alive connection but answers a new one's first request") {
  auto server = start_on_free_port();
  server->set_ready(true);
  std::uint16_t port = server->local_address().port;
  Client kept(port);
  CHECK(kept.send(http::verb::get, "/healthz").result() == http::status::ok);
  // Connected, no request yet: accepted, or still in the kernel's queue when the listener
  // closes. Either way its client is about to send a request, and gets an answer.
  Client fresh(port);
  server->begin_drain();
  CHECK(kept.closed_by_server(std::chrono::seconds(10)));
  auto answer = fresh.send(http::verb::get, "/readyz");
  CHECK(answer.result() == http::status::service_unavailable);
  CHECK_FALSE(answer.keep_alive());  // and then it closes, so the client reconnects
  CHECK(fresh.closed_by_server(std::chrono::seconds(10)));
}

TEST_CASE("http server: a draining server that shares its port answers the connections queued at it and steers new ones to its successor") {
  HttpServer::Options options;
  options.listen = {"127.0.0.1", 0};
  options.io_threads = 1;
  options.reuse_port = true;
  auto old = HttpServer::start(options);
  REQUIRE(old.ok());
  options.listen.port = (*old)->local_address().port;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  (*old)->set_handler([&entered, &first, released](HttpRequest, Respond respond) {
    if (first.exchange(false)) {
      entered.set_value();
      released.wait();
    }
    respond(HttpResponse{200, {{"X-Server", "old"}}, ""});
  });
  auto mcp_post = [] {
    http::request<http::string_body> req{http::verb::post, "/mcp", 11};
    req.set(http::field::host, "127.0.0.1");
    return req;
  };
  // The old server's only I/O thread is held in a handler, so what reaches its listener
  // now queues there (the kernel completes the handshakes).
  Client holder(options.listen.port);
  holder.send_only(mcp_post());
  REQUIRE(entered.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);

  auto successor = HttpServer::start(options);
  REQUIRE(successor.ok());
  (*successor)->set_handler([](HttpRequest, Respond respond) {
    respond(HttpResponse{200, {{"X-Server", "new"}}, ""});
  });
  constexpr int kQueued = 24;  // the kernel's hash sends each to either server
  std::vector<std::unique_ptr<Client>> queued;
  for (int i = 0; i < kQueued; ++i) {
    queued.push_back(std::make_unique<Client>(options.listen.port));
    queued.back()->send_only(mcp_post());
  }
  auto draining = std::async(std::launch::async, [&] { (*old)->begin_drain(); });
  release.set_value();
  REQUIRE(draining.wait_for(std::chrono::seconds(10)) == std::future_status::ready);

  int answered_by_old = 0;
  for (auto& c : queued) {
    auto res = c->read_within(std::chrono::seconds(10));
    REQUIRE_MESSAGE(res, "a connection queued at the draining listener was not answered");
    if ((*res)["X-Server"] == "old") ++answered_by_old;
  }
  CHECK(answered_by_old > 0);
  // New connections reach the successor while the old listener is still open, and every
  // one is answered. The kernel falls back to its hash when it cannot run the steering
  // program for a handshake (it runs it on a clone of the packet, made without waiting for
  // memory); such a connection lands on the draining server, which still answers it. That
  // happened once in CI (1 of 16, 2026-12-07, not reproduced in 300 runs since), so the
  // check is that nearly all go to the successor: with the hash alone, about half would,
  // and 28 or more of 32 would happen about once in 100,000 runs.
  constexpr int kFresh = 32;
  int to_new = 0;
  for (int i = 0; i < kFresh; ++i) {
    Client fresh(options.listen.port);
    fresh.send_only(mcp_post());
    auto res = fresh.read_within(std::chrono::seconds(10));
    REQUIRE(res);
    std::string server((*res)["X-Server"]);
    CHECK((server == "new" || server == "old"));
    to_new += server == "new";
  }
  CHECK(to_new >= kFresh - 4);
  CHECK(holder.read_within(std::chrono::seconds(10)));

  // Once the old listener has closed, the port's group forgets the steering: the next
  // server to bind shares new connections with the one already there, as on a fresh port.
  (*old)->close_listener();
  auto next = HttpServer::start(options);
  REQUIRE(next.ok());
  (*next)->set_handler([](HttpRequest, Respond respond) {
    respond(HttpResponse{200, {{"X-Server", "next"}}, ""});
  });
  int to_successor = 0;
  int to_next = 0;
  for (int i = 0; i < 32; ++i) {
    Client fresh(options.listen.port);
    fresh.send_only(mcp_post());
    auto res = fresh.read_within(std::chrono::seconds(10));
    REQUIRE(res);
    to_successor += (*res)["X-Server"] == "new";
    to_next += (*res)["X-Server"] == "next";
  }
  CHECK(to_successor > 0);
  CHECK(to_next > 0);
}

TEST_CASE("http server: at the fd limit a new connection is answered 503, the accept loop does not spin, and service resumes once fds are free") {
  CapturedLog log;
  auto server = start_on_free_port();
  tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), server->local_address().port);

  // The client's socket has its fd before the process runs out of them: connecting takes none.
  net::io_context ioc;
  tcp::socket client(ioc);
  client.open(tcp::v4());
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
  int highest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(highest >= 0);
  rlimit lowered = saved;
  lowered.rlim_cur = static_cast<rlim_t>(highest) + 16;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  std::vector<int> hogs{highest};
  for (int fd; (fd = ::dup(highest)) >= 0;) hogs.push_back(fd);
  CHECK(errno == EMFILE);

  client.connect(endpoint);
  http::request<http::string_body> req{http::verb::get, "/healthz", 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(client, req);
  timeval tv{10, 0};
  setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  beast::flat_buffer buffer;
  http::response<http::string_body> refused;
  boost::system::error_code ec;
  http::read(client, buffer, refused, ec);

  for (int fd : hogs) ::close(fd);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
  REQUIRE_FALSE(ec);
  CHECK(refused.result() == http::status::service_unavailable);
  CHECK_FALSE(refused.keep_alive());
  CHECK(refused[http::field::retry_after] == "1");

  Client later(server->local_address().port);
  CHECK(later.send(http::verb::get, "/healthz").result() == http::status::ok);
  // One failed accept for the one queued connection, logged once: not a loop retrying it.
  CHECK(log.count("accept_failed") == 1);
}

TEST_CASE("http server: over max_connections a new connection is answered 503 and closed; the open ones are served, and a freed place is taken again") {
  HttpServer::Options options;
  options.max_connections = 2;
  CapturedLog log;
  auto server = start_on_free_port(options);
  std::uint16_t port = server->local_address().port;

  // Two kept-alive connections, each answered once (so both are open at the server).
  auto first = std::make_unique<Client>(port);
  Client second(port);
  REQUIRE(first->send(http::verb::get, "/healthz").result() == http::status::ok);
  REQUIRE(second.send(http::verb::get, "/healthz").result() == http::status::ok);
  for (int i = 0; i < 3; ++i) {
    Client over(port);
    http::request<http::string_body> req{http::verb::get, "/healthz", 11};
    req.set(http::field::host, "127.0.0.1");
    over.send_only(req);
    auto refused = over.read_within(std::chrono::seconds(10));
    REQUIRE(refused);
    CHECK(refused->result() == http::status::service_unavailable);
    CHECK_FALSE(refused->keep_alive());
    CHECK((*refused)[http::field::retry_after] == "1");
    CHECK(refused->body().find("limit") != std::string::npos);
    CHECK(over.closed_by_server(std::chrono::seconds(10)));
  }
  // The open ones go on as before.
  CHECK(first->send(http::verb::get, "/healthz").result() == http::status::ok);
  CHECK(second.send(http::verb::get, "/healthz").result() == http::status::ok);

  // One closes; its place is free once the server has seen the close (asynchronously, so
  // a new connection may be refused a few times first; bounded).
  first.reset();
  bool served = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!served && std::chrono::steady_clock::now() < deadline) {
    Client next(port);
    served = next.send(http::verb::get, "/healthz").result() == http::status::ok;
  }
  CHECK(served);
  // Logged, with the limit (at most a line a second, however many are refused).
  auto lines = log.lines("connection_limit");
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.front().find("limit=2") != std::string::npos);
}

TEST_CASE("http server: an unresolvable host is a clear error") {
  HttpServer::Options options;
  options.listen = {"no-such-host.invalid", 0};
  auto server = HttpServer::start(options);
  REQUIRE_FALSE(server.ok());
  CHECK(server.error().code == dorm::ErrorCode::invalid_argument);
  CHECK(server.error().message.find("no-such-host.invalid") != std::string::npos);
}

TEST_CASE("http server: endpoint requests wait for the handler, which may answer from any thread") {
  auto server = start_on_free_port();
  std::uint16_t port = server->local_address().port;
  Client early(port);
  http::request<http::string_body> req{http::verb::post, "/mcp?x=1", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set("X-Custom-Header", "Value");
  req.body() = "hello";
  early.send_only(req);
  // The request is read and parked; only the probes answer meanwhile.
  Client probe(port);
  CHECK(probe.send(http::verb::get, "/healthz").result() == http::status::ok);

  std::promise<HttpRequest> seen;
  std::vector<std::thread> answerers;
  server->set_handler([&](HttpRequest request, Respond respond) {
    bool first = request.body == "hello";
    if (first) seen.set_value(request);
    // Answer later, from a thread of our own: the I/O thread is not held.
    answerers.emplace_back([respond, first] {
      respond(HttpResponse{first ? 201 : 202, {{"Content-Type", "text/plain"}, {"X-Answer", "1"}},
                           first ? "made" : ""});
      respond(HttpResponse{500, {}, "ignored: a second answer"});
    });
  });
  auto res = early.read();
  CHECK(res.result() == http::status::created);
  CHECK(res.body() == "made");
  CHECK(res["X-Answer"] == "1");
  auto got = seen.get_future().get();
  CHECK(got.method == "POST");
  CHECK(got.target == "/mcp?x=1");
  REQUIRE(got.header("x-custom-header"));
  CHECK(*got.header("x-custom-header") == "Value");
  CHECK_FALSE(got.header("X-Custom-Header"));  // names are lower-cased

  // Same connection, next request: answered directly now that the handler is set.
  CHECK(early.send(http::verb::get, "/mcp").result() == http::status::accepted);
  for (auto& t : answerers) t.join();
}

TEST_CASE("http server: header limit 431, a header trickled past its timeout and an idle connection are closed") {
  HttpServer::Options options;
  options.max_header_bytes = 1024;
  options.header_timeout = std::chrono::milliseconds(300);
  options.idle_timeout = std::chrono::milliseconds(300);
  auto server = start_on_free_port(options);
  std::uint16_t port = server->local_address().port;

  Client big(port);
  http::request<http::string_body> req{http::verb::get, "/healthz", 11};
  req.set("X-Filler", std::string(2000, 'a'));
  big.send_only(req);
  CHECK(big.read().result() == http::status::request_header_fields_too_large);

  Client slow(port);
  slow.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // never finishes
  CHECK(slow.closed_by_server(std::chrono::seconds(20)));

  Client idle(port);
  CHECK(idle.send(http::verb::get, "/healthz").result() == http::status::ok);
  CHECK(idle.closed_by_server(std::chrono::seconds(20)));
}

namespace {

// A handler that answers every endpoint request with a streamed body it hands to the test.
struct StreamingHandler {
  std::promise<std::shared_ptr<StreamBody>> next;
  void install(HttpServer& server) {
    server.set_handler([this](HttpRequest, Respond respond) {
      auto body = std::make_shared<StreamBody>();
      HttpResponse head(200, {{"Content-Type", "text/event-stream"}});
      head.stream = body;
      respond(std::move(head));
      next.set_value(body);
    });
  }
  std::shared_ptr<StreamBody> take() {
    auto body = next.get_future().get();
    next = {};
    return body;
  }
};

// Waits (bounded) until `body` is closed.
bool closes_within(const std::shared_ptr<StreamBody>& body, std::chrono::seconds bound) {
  auto closed = std::make_shared<std::promise<void>>();
  body->on_closed([closed] { closed->set_value(); });
  return closed->get_future().wait_for(bound) == std::future_status::ready;
}

}  // namespace

TEST_CASE("http server: a streamed body goes out chunked as it is written; the connection then serves the next request") {
  auto server = start_on_free_port();
  StreamingHandler handler;
  handler.install(*server);
  Client client(server->local_address().port);
  http::request<http::string_body> req{http::verb::get, "/mcp", 11};
  req.set(http::field::host, "127.0.0.1");
  client.send_only(req);
  auto body = handler.take();
  CHECK(body->write("id: 1\ndata: a\n\n") > 0);
  CHECK(body->write("id: 2\ndata: b\n\n") > 0);
  body->end();
  auto res = client.read();
  CHECK(res.result() == http::status::ok);
  CHECK(res.chunked());
  CHECK(res[http::field::content_type] == "text/event-stream");
  CHECK(res.body() == "id: 1\ndata: a\n\nid: 2\ndata: b\n\n");
  CHECK(closes_within(body, std::chrono::seconds(10)));
  CHECK(body->write("late") == 0);  // closed: dropped

  // Keep-alive: the same connection carries another streamed response.
  client.send_only(req);
  auto second = handler.take();
  second->write("data: c\n\n");
  second->end();
  CHECK(client.read().body() == "data: c\n\n");
}

TEST_CASE("http server: a client that goes away closes its streamed body, even while nothing is written") {
  auto server = start_on_free_port();
  StreamingHandler handler;
  handler.install(*server);
  auto client = std::make_unique<Client>(server->local_address().port);
  http::request<http::string_body> req{http::verb::get, "/mcp", 11};
  req.set(http::field::host, "127.0.0.1");
  client->send_only(req);
  auto body = handler.take();
  body->write(": open\n\n");
  client.reset();  // the socket closes
  CHECK(closes_within(body, std::chrono::seconds(10)));
  CHECK(body->closed());
}

TEST_CASE("http server: a client that reads nothing leaves the writer's bytes unsent; abort closes the connection anyway") {
  auto server = start_on_free_port();
  StreamingHandler handler;
  handler.install(*server);
  Client client(server->local_address().port);
  http::request<http::string_body> req{http::verb::get, "/mcp", 11};
  req.set(http::field::host, "127.0.0.1");
  client.send_only(req);
  auto body = handler.take();
  // 8 MiB written while the client reads nothing: the socket buffers are small for
  // streams, so most of it stays unsent where the writer can see it.
  std::string chunk(64 * 1024, 'x');
  std::size_t unsent = 0;
  for (int i = 0; i < 128; ++i) unsent = body->write(chunk);
  CHECK(unsent > 4 * 1024 * 1024);
  body->abort();
  CHECK(closes_within(body, std::chrono::seconds(10)));
  // What reached the client's socket before the cut is still readable; after it, the end.
  CHECK(client.drained_then_closed(std::chrono::seconds(10)));
}

TEST_CASE(
    "http server: finish_accepted closes the listener and waits until every accepted request is "
    "answered; a stream counts from its head") {
  auto server = start_on_free_port();
  server->set_ready(true);
  StreamingHandler handler;
  handler.install(*server);
  std::uint16_t port = server->local_address().port;
  Client streaming(port);
  http::request<http::string_body> req{http::verb::get, "/mcp", 11};
  req.set(http::field::host, "127.0.0.1");
  streaming.send_only(req);
  auto body = handler.take();
  body->write(": open\n\n");
  Client kept(port);
  CHECK(kept.send(http::verb::get, "/healthz").result() == http::status::ok);
  // The stream's head and the kept connection's answer are written (bounded wait).
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server->unanswered_requests() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(server->unanswered_requests() == 0);

  // Connected, nothing sent yet: it owes its first request an answer.
  Client fresh(port);
  server->begin_drain();
  CHECK_FALSE(
      server->finish_accepted(std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
  CHECK(server->unanswered_requests() == 1);
  // The listener is closed: a successor binds the port without sharing it.
  HttpServer::Options options;
  options.listen = {"127.0.0.1", port};
  auto successor = HttpServer::start(options);
  REQUIRE(successor.ok());

  auto answer = fresh.send(http::verb::get, "/readyz");
  CHECK(answer.result() == http::status::service_unavailable);
  CHECK(server->finish_accepted(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  CHECK(server->unanswered_requests() == 0);
  CHECK_FALSE(body->closed());  // the open stream was no reason to wait, and goes on
  server->close_connections();
  CHECK(closes_within(body, std::chrono::seconds(10)));
}
