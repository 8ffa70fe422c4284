// The only translation unit that includes Boost.Beast (see http_server.hpp).
#include "dorm/mcp/http_server.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <vector>

namespace dorm::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// What a request needs from the server; outlives every connection.
struct ServerState {
  std::atomic<bool> ready{false};
  std::size_t max_body_bytes = 0;
  std::chrono::seconds idle_timeout{60};
};

http::response<http::string_body> plain_response(const http::request<http::string_body>& req,
                                                 http::status status, std::string body) {
  http::response<http::string_body> res{status, req.version()};
  res.set(http::field::server, "dorm");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

http::response<http::string_body> route(const ServerState& state,
                                        const http::request<http::string_body>& req) {
  std::string_view target = req.target();
  target = target.substr(0, target.find('?'));
  bool probe = target == "/healthz" || target == "/readyz";
  if (!probe) return plain_response(req, http::status::not_found, "not found\n");
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = plain_response(req, http::status::method_not_allowed, "method not allowed\n");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  }
  if (target == "/healthz") return plain_response(req, http::status::ok, "ok\n");
  if (state.ready.load(std::memory_order_acquire)) {
    return plain_response(req, http::status::ok, "ready\n");
  }
  return plain_response(req, http::status::service_unavailable, "starting\n");
}

// One accepted TCP connection: read a request, answer it, repeat while keep-alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<const ServerState> state)
      : stream_(std::move(socket)), state_(std::move(state)) {}

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(state_->max_body_bytes);
    stream_.expires_after(state_->idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->on_read(ec);
                     });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset) {
      return close();
    }
    if (ec == http::error::body_limit) {
      return reply_error(http::status::payload_too_large, "request body too large\n");
    }
    if (ec) return reply_error(http::status::bad_request, "malformed HTTP request\n");
    request_ = parser_->release();
    write(route(*state_, request_));
  }

  // The request could not be read completely: answer and close the connection.
  void reply_error(http::status status, std::string body) {
    http::request<http::string_body> req;
    req.version(11);
    req.keep_alive(false);
    write(plain_response(req, status, std::move(body)));
  }

  void write(http::response<http::string_body> res) {
    response_ = std::move(res);
    bool keep_alive = response_.keep_alive();
    http::async_write(stream_, response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        if (ec || !keep_alive) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  std::shared_ptr<const ServerState> state_;
};

}  // namespace

struct HttpServer::Impl {
  net::io_context ioc;
  tcp::acceptor acceptor{net::make_strand(ioc)};
  std::shared_ptr<ServerState> state = std::make_shared<ServerState>();
  ListenAddress local;
  std::vector<std::thread> threads;
  bool listener_closed = false;  // only touched on the acceptor's strand

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // Typically EMFILE under fd exhaustion: log and keep accepting.
        spdlog::warn("accept failed: {}", ec.message());
      } else {
        std::make_shared<Connection>(std::move(socket), state)->start();
      }
      accept();
    });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const Options& options) {
  auto impl = std::make_unique<Impl>();
  impl->state->max_body_bytes = options.max_body_bytes;
  impl->state->idle_timeout = std::chrono::seconds(options.idle_timeout_seconds);

  beast::error_code ec;
  tcp::resolver resolver{impl->ioc};
  auto results = resolver.resolve(options.listen.host, std::to_string(options.listen.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Error{ErrorCode::invalid_argument, "cannot resolve listen host '" +
                                                  options.listen.host + "': " + ec.message()};
  }
  tcp::endpoint endpoint = results.begin()->endpoint();
  std::string where = options.listen.to_string();

  // open + reuse_address + bind: a plain open() + bind() would not set SO_REUSEADDR, and a
  // restart right after a SIGKILL would then fail with EADDRINUSE (TIME_WAIT sockets).
  auto& acceptor = impl->acceptor;
  if (acceptor.open(endpoint.protocol(), ec); ec) {
    return Error{ErrorCode::io_error, "cannot open a socket for " + where + ": " + ec.message()};
  }
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec) {
    return Error{ErrorCode::io_error, "cannot set SO_REUSEADDR: " + ec.message()};
  }
  if (acceptor.bind(endpoint, ec); ec) {
    return Error{ErrorCode::io_error, "cannot bind " + where + ": " + ec.message()};
  }
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
    return Error{ErrorCode::io_error, "cannot listen on " + where + ": " + ec.message()};
  }
  tcp::endpoint bound = acceptor.local_endpoint(ec);
  impl->local = ListenAddress{bound.address().to_string(), bound.port()};

  impl->accept();
  int n = options.io_threads < 1 ? 1 : options.io_threads;
  for (int i = 0; i < n; ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() {
  close_listener();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
}

ListenAddress HttpServer::local_address() const { return impl_->local; }

void HttpServer::set_ready(bool ready) {
  impl_->state->ready.store(ready, std::memory_order_release);
}

void HttpServer::close_listener() {
  if (impl_->ioc.stopped()) return;
  std::promise<void> done;
  auto closed = done.get_future();
  net::dispatch(impl_->acceptor.get_executor(), [this, &done] {
    if (!impl_->listener_closed) {
      beast::error_code ignored;
      impl_->acceptor.close(ignored);
      impl_->listener_closed = true;
    }
    done.set_value();
  });
  closed.wait();
}

}  // namespace dorm::mcp
