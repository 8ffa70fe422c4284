// The one translation unit of `dorm deploy-sim` that compiles Boost.Beast (see
// http_client.hpp for what the client does and why connections are pooled).
#include "http_client.hpp"

#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>

#include "version.hpp"

namespace dorm::deploy_sim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// read_all's bound: larger than any answer the simulation's tools give.
constexpr std::size_t kMaxWholeBody = 4u << 20;
}  // namespace

class HttpConnection {
 public:
  explicit HttpConnection(asio::any_io_executor executor) : stream(std::move(executor)) {}

  // Applies the exchange's deadline to the next operation (Beast times each one out).
  void arm() {
    if (deadline == Clock::time_point::max()) {
      stream.expires_never();
    } else {
      stream.expires_at(deadline);
    }
  }

  // Whether the peer has closed (or sent something unasked, which no HTTP/1.1 server does
  // on an idle connection): such a connection cannot carry another request.
  bool unusable() {
    char byte;
    auto n = ::recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }

  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  Clock::time_point deadline = Clock::time_point::max();
  bool reusable = false;  // its last response was read whole and allows keep-alive
};

HttpResponse::HttpResponse(HttpClient& client, std::unique_ptr<HttpConnection> connection,
                           int status, bool has_body,
                           std::vector<std::pair<std::string, std::string>> headers)
    : client_(client),
      connection_(std::move(connection)),
      status_(status),
      has_body_(has_body),
      headers_(std::move(headers)) {}

HttpResponse::~HttpResponse() {
  if (connection_) client_.give_back(std::move(connection_));
}

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers_) {
    if (beast::iequals(key, name)) return value;
  }
  return {};
}

asio::awaitable<BodyRead> HttpResponse::read_some() {
  BodyRead out;
  auto& c = *connection_;
  auto& parser = *c.parser;
  if (parser.is_done()) {
    out.done = true;
    c.reusable = parser.keep_alive();
    co_return out;
  }
  char chunk[16 * 1024];
  parser.get().body().data = chunk;
  parser.get().body().size = sizeof chunk;
  c.arm();
  auto [ec, n] = co_await http::async_read_some(c.stream, c.buffer, parser, kTuple);
  (void)n;
  if (ec == http::error::need_buffer) ec = {};
  out.bytes.assign(chunk, sizeof chunk - parser.get().body().size);
  parser.get().body().data = nullptr;
  parser.get().body().size = 0;
  if (ec) {
    out.error = ec.message();
    out.timed_out = ec == beast::error::timeout;
    c.reusable = false;
  } else if (parser.is_done()) {
    out.done = true;
    c.reusable = parser.keep_alive();
  }
  co_return out;
}

asio::awaitable<BodyRead> HttpResponse::read_all() {
  BodyRead whole;
  for (;;) {
    BodyRead piece = co_await read_some();
    whole.bytes += piece.bytes;
    if (!piece.error.empty() || piece.done) {
      whole.error = std::move(piece.error);
      whole.timed_out = piece.timed_out;
      whole.done = piece.done;
      co_return whole;
    }
    if (whole.bytes.size() > kMaxWholeBody) {
      whole.error = "body larger than 4 MiB";
      connection_->reusable = false;
      co_return whole;
    }
  }
}

HttpClient::HttpClient(asio::any_io_executor executor, std::string host, std::uint16_t port)
    : executor_(std::move(executor)), host_(std::move(host)), port_(port) {}

HttpClient::~HttpClient() {
  close_all();
}

std::unique_ptr<HttpConnection> HttpClient::take_idle() {
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (!c->unusable()) return c;
  }
  return nullptr;
}

void HttpClient::give_back(std::unique_ptr<HttpConnection> connection) {
  in_use_.erase(connection.get());
  if (connection->reusable && connection->stream.socket().is_open()) {
    connection->reusable = false;
    connection->parser.reset();
    idle_.push_back(std::move(connection));
  }
}

void HttpClient::close_all() {
  for (auto& c : idle_) c->stream.close();
  idle_.clear();
  for (auto* c : in_use_) c->stream.close();
}

namespace {

HttpAnswer failure(std::string what, const beast::error_code& ec) {
  HttpAnswer a;
  a.error = what + ": " + ec.message();
  a.timed_out = ec == beast::error::timeout;
  return a;
}

http::request<http::string_body> build(const HttpRequest& r, const std::string& host, bool reuse) {
  http::request<http::string_body> req{http::string_to_verb(r.method), r.target, 11};
  req.set(http::field::host, host);
  req.set(http::field::user_agent, std::string("dorm-deploy-sim/") + kVersion);
  for (const auto& [name, value] : r.headers) req.set(name, value);
  req.keep_alive(reuse);
  req.body() = r.body;
  req.prepare_payload();
  return req;
}

}  // namespace

asio::awaitable<HttpAnswer> HttpClient::send(HttpRequest request, Clock::time_point deadline,
                                             bool reuse) {
  std::unique_ptr<HttpConnection> c = reuse ? take_idle() : nullptr;
  bool fresh = !c;
  if (fresh) c = std::make_unique<HttpConnection>(executor_);
  c->deadline = deadline;
  // Registered from here, so close_all() reaches a connect still in progress too; whatever
  // happens below, it is not left registered once this returns without a response.
  in_use_.insert(c.get());
  struct Unregister {
    HttpClient& client;
    HttpConnection* c;
    bool keep = false;
    ~Unregister() {
      if (!keep) client.in_use_.erase(c);
    }
  } unregister{*this, c.get()};
  if (fresh) {
    c->arm();
    asio::ip::tcp::endpoint to(asio::ip::make_address(host_), port_);
    auto [ec] = co_await c->stream.async_connect(to, kTuple);
    if (ec) co_return failure("connect", ec);
  }

  auto req = build(request, host_ + ":" + std::to_string(port_), reuse);
  c->arm();
  auto [wec, written] = co_await http::async_write(c->stream, req, kTuple);
  (void)written;
  if (wec) co_return failure("send", wec);
  c->parser.emplace();
  c->parser->body_limit(boost::none);
  c->arm();
  auto [hec, read] = co_await http::async_read_header(c->stream, c->buffer, *c->parser, kTuple);
  (void)read;
  if (hec) co_return failure("response", hec);

  const auto& head = c->parser->get();
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& field : head) {
    headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  int status = static_cast<int>(head.result_int());
  bool has_body = !c->parser->is_done();
  if (!has_body) c->reusable = c->parser->keep_alive();
  unregister.keep = true;
  HttpAnswer answer;
  answer.response = std::unique_ptr<HttpResponse>(
      new HttpResponse(*this, std::move(c), status, has_body, std::move(headers)));
  co_return answer;
}

}  // namespace dorm::deploy_sim
