// HttpServer over real loopback sockets, with a synchronous Boost.Beast client.
#include "dorm/mcp/http_server.hpp"

#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using dorm::mcp::HttpServer;

namespace {

std::unique_ptr<HttpServer> start_on_free_port() {
  HttpServer::Options options;
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

  http::response<http::string_body> read() {
    http::response<http::string_body> res;
    http::read(socket_, buffer_, res);
    return res;
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

TEST_CASE("http server: an unresolvable host is a clear error") {
  HttpServer::Options options;
  options.listen = {"no-such-host.invalid", 0};
  auto server = HttpServer::start(options);
  REQUIRE_FALSE(server.ok());
  CHECK(server.error().code == dorm::ErrorCode::invalid_argument);
  CHECK(server.error().message.find("no-such-host.invalid") != std::string::npos);
}
