// The only translation unit that includes Boost.Beast (see http_server.hpp).
#include "dorm/mcp/http_server.hpp"

#include <linux/filter.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dorm/runtime/log.hpp"

namespace dorm::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// How long a draining server that shares its port keeps accepting after it steered new
// connections to its successor: a handshake the kernel began here before the steering
// completes within a round trip, and its connection must still be accepted and answered.
constexpr auto kListenerHandoff = std::chrono::seconds(1);
// After a failed accept (at the fd limit, typically) the loop waits this long before the
// next: retrying at once fails again at once, a core spinning on the pending connection.
constexpr auto kAcceptPause = std::chrono::milliseconds(50);
// Failed accepts are logged at most once per this interval, with a count.
constexpr auto kAcceptLogInterval = std::chrono::seconds(1);
// The socket send buffer of a streamed response (Linux doubles it).
constexpr int kStreamSendBuffer = 64 * 1024;
// Responses are counted by status code below this (HTTP codes are three digits).
constexpr std::size_t kStatusCodes = 600;

class Connection;

// What a request needs from the server; outlives every connection.
struct ServerState {
  HttpServer::Options options;
  std::atomic<bool> ready{false};
  // set_unready_reason(): /readyz answers 503 with it while it is not empty.
  mutable std::mutex unready_mutex;
  std::string unready_reason;
  // Set once by begin_drain(): every response ends its connection from then on.
  std::atomic<bool> draining{false};
  std::mutex mutex;  // guards the two below
  Handler handler;
  // Requests to the endpoint that arrived before the handler was set, in arrival order.
  std::vector<std::pair<HttpRequest, Respond>> waiting;
  // Every live connection, so a drain or a stop can reach the idle ones.
  std::mutex connections_mutex;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> connections;
  // HttpServer::responses_by_status and open_streams.
  std::array<std::atomic<std::uint64_t>, kStatusCodes> responses{};
  std::atomic<std::size_t> streams_open{0};
  // Connections that owe a response: their current request (a fresh connection: its
  // first, not yet sent) has none written yet. HttpServer::finish_accepted waits for 0.
  std::atomic<std::size_t> owed{0};
  std::mutex owed_mutex;
  std::condition_variable owed_paid;  // notified when owed drops to 0

  void owe() { owed.fetch_add(1, std::memory_order_acq_rel); }
  void pay() {
    if (owed.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(owed_mutex);
      owed_paid.notify_all();
    }
  }

  void count_response(unsigned status) {
    if (status < kStatusCodes) responses[status].fetch_add(1, std::memory_order_relaxed);
  }
};

// Whether `address` is a loopback address, also when it is IPv4 mapped into IPv6 (a
// dual-stack listener sees 127.0.0.1 as ::ffff:127.0.0.1).
bool is_loopback(const net::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return address.is_loopback();
}

http::response<http::string_body> plain_response(unsigned version, bool keep_alive,
                                                 http::status status, std::string body) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "dorm");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

http::response<http::string_body> probe(const ServerState& state,
                                        const http::request<http::string_body>& req,
                                        std::string_view path) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = plain_response(req.version(), req.keep_alive(), http::status::method_not_allowed,
                              "method not allowed\n");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  }
  if (path == "/healthz") {
    return plain_response(req.version(), req.keep_alive(), http::status::ok, "ok\n");
  }
  std::string unready;
  {
    std::lock_guard lock(state.unready_mutex);
    unready = state.unready_reason;
  }
  if (!state.ready.load(std::memory_order_acquire)) {
    return plain_response(req.version(), req.keep_alive(), http::status::service_unavailable,
                          "starting\n");
  }
  if (!unready.empty()) {
    return plain_response(req.version(), req.keep_alive(), http::status::service_unavailable,
                          unready + "\n");
  }
  return plain_response(req.version(), req.keep_alive(), http::status::ok, "ready\n");
}

// The request line and header fields (Beast keeps them in arrival order), a name sent
// on several lines folded into one field (see HttpRequest::Field). Linear in the number
// of lines: a 16 KiB head of one-letter names costs no more than one of long ones.
HttpRequest to_request(const http::request_header<>& head) {
  HttpRequest out;
  out.method = std::string(head.method_string());
  out.target = std::string(head.target());
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& field : head) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto [at, fresh] = index.try_emplace(name, out.headers.size());
    if (fresh) {
      out.headers.push_back({std::move(name), std::string(field.value()), 1});
      continue;
    }
    auto& joined = out.headers[at->second];
    joined.value.append(", ").append(field.value());
    ++joined.lines;
  }
  return out;
}

http::response<http::string_body> to_beast(HttpResponse&& r, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "dorm");
  for (auto& [name, value] : r.headers) res.insert(name, value);
  res.keep_alive(keep_alive);
  res.body() = std::move(r.body);
  res.prepare_payload();
  return res;
}

// One accepted TCP connection: read a request, answer it, repeat while keep-alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<ServerState> state)
      : stream_(std::move(socket)), state_(std::move(state)) {}
  ~Connection() {
    // The server stopped with a stream open: its writer must learn it is over.
    if (body_) {
      body_->close();
      state_->streams_open.fetch_sub(1, std::memory_order_relaxed);
    }
    paid();
    std::lock_guard lock(state_->connections_mutex);
    state_->connections.erase(this);
  }

  void start() {
    {
      std::lock_guard lock(state_->connections_mutex);
      state_->connections.emplace(this, weak_from_this());
    }
    owe();  // its client connected to send a request
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  // The server is draining (on the connection's strand): a connection waiting for its
  // next request closes now; one busy with a request closes after its response. A
  // request whose first bytes already arrived (not yet read) counts as busy: it is
  // answered, not dropped; so is the first request of a connection that has had none
  // (accepted as the listener closed, its client is about to send it).
  void drain_now() {
    if (!idle_ || requests_ == 0) return;
    beast::error_code ec;
    if (stream_.socket().available(ec) == 0 || ec) close();
  }

  // The server is stopping: close now, whatever the connection is doing.
  void abort_now() { close(); }

  net::any_io_executor executor() { return stream_.get_executor(); }

 private:
  const HttpServer::Options& options() const { return state_->options; }

  void read() {
    parser_.emplace();
    // No body limit while the header is read: Beast would refuse a Content-Length over it
    // before check_head, telling an unauthenticated caller about our limits first.
    // after_header sets the limit before any of the body is parsed.
    parser_->body_limit(boost::none);
    parser_->header_limit(static_cast<std::uint32_t>(options().max_header_bytes));
    head_.reset();
    head_method_ = false;
    if (buffer_.size() > 0) {
      owe();
      return read_header();
    }
    // A draining server takes no new request on a kept-alive connection: the client opens
    // a new one, which reaches the successor. A new connection gets its first one answered.
    if (requests_ > 0 && state_->draining.load(std::memory_order_acquire)) return close();
    // Idle: wait for the first byte of the next request under the idle timeout.
    idle_ = true;
    stream_.expires_after(options().idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->idle_ = false;
                              if (ec) return self->close();
                              self->owe();
                              self->buffer_.commit(n);
                              self->read_header();
                            });
  }

  void read_header() {
    stream_.expires_after(options().header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (self->failed(ec)) return;
                              self->after_header();
                            });
  }

  // The header is read and none of the body is. In this order: framing, check_head (for
  // the endpoint), the declared body size; only then is the body read.
  void after_header() {
    ++requests_;
    const auto& head = parser_->get();
    head_method_ = head.method() == http::verb::head;
    if (!framing_is_plain()) {
      return reply_error(http::status::bad_request,
                         "Transfer-Encoding must be exactly 'chunked'\n");
    }
    if (const auto* route = local_route(head.target())) {
      auto request = to_request(head);
      beast::error_code ec;
      auto peer = stream_.socket().remote_endpoint(ec);
      if (!ec) {
        request.peer = peer.address().to_string();
        request.peer_loopback = is_loopback(peer.address());
      }
      auto response = route->answer(request);
      if (response.stream) response.stream->close();  // not for local routes
      return refuse(std::move(response));
    }
    if (endpoint_path(head.target())) {
      head_ = to_request(head);
      if (options().check_head) {
        if (auto refusal = options().check_head(*head_)) return refuse(std::move(*refusal));
      }
    }
    if (auto declared = parser_->content_length();
        declared && *declared > options().max_body_bytes) {
      return reply_error(http::status::payload_too_large, body_over_limit());
    }
    parser_->body_limit(options().max_body_bytes);  // a chunked body is counted as it comes
    read_body();
  }

  const HttpServer::Options::LocalRoute* local_route(std::string_view target) const {
    std::string_view path = target.substr(0, target.find('?'));
    for (const auto& route : options().local_routes) {
      if (path == route.path) return &route;
    }
    return nullptr;
  }

  bool endpoint_path(std::string_view target) const {
    std::string_view path = target.substr(0, target.find('?'));
    if (path == options().endpoint_path) return true;
    for (const auto& prefix : options().route_prefixes) {
      if (path.starts_with(prefix)) return true;
    }
    return false;
  }

  std::string body_over_limit() const {
    return "request body over the limit of " + std::to_string(options().max_body_bytes) +
           " bytes\n";
  }

  // Answers without reading the request's body (check_head refused it, or a local route
  // answered it). A request that has none leaves the connection in step, so it may go on;
  // otherwise the unread body is discarded while lingering (see linger), never parsed.
  void refuse(HttpResponse&& response) {
    const auto& head = parser_->get();
    bool keep_alive = head.keep_alive() && parser_->is_done();
    write(to_beast(std::move(response), head.version(), keep_alive));
  }

  // A body is framed by Content-Length or by a lone `chunked`. Anything else
  // (`chunked, identity`, `gzip, chunked`, two Transfer-Encoding headers) is a framing a
  // proxy in front of us may read differently than we do (request smuggling), so it is
  // refused before the body is read.
  bool framing_is_plain() const {
    const auto& header = parser_->get();
    auto count = header.count(http::field::transfer_encoding);
    if (count == 0) return true;
    if (count > 1) return false;
    return beast::iequals(header[http::field::transfer_encoding], "chunked");
  }

  void read_body() {
    stream_.expires_after(options().header_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (self->failed(ec)) return;
                       self->dispatch_request();
                     });
  }

  // Handles a read error: closes, or answers and closes. True if there was one.
  bool failed(beast::error_code ec) {
    if (!ec) return false;
    if (ec == http::error::body_limit) {
      reply_error(http::status::payload_too_large, body_over_limit());
    } else if (ec == http::error::multiple_content_length) {
      reply_error(http::status::bad_request,
                  "Content-Length sent more than once, with different values\n");
    } else if (ec == http::error::header_limit) {
      reply_error(http::status::request_header_fields_too_large,
                  "request header over the limit of " +
                      std::to_string(options().max_header_bytes) + " bytes\n");
    } else if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
               ec == net::error::operation_aborted || ec == net::error::connection_reset ||
               ec == net::error::eof) {
      close();
    } else {
      reply_error(http::status::bad_request, "malformed HTTP request\n");
    }
    return true;
  }

  void dispatch_request() {
    auto req = parser_->release();
    // Not needed until the next request (read() makes a new one): a connection that
    // carries a long stream should not hold a parser meanwhile.
    parser_.reset();
    std::string_view target = req.target();
    std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz" || path == "/readyz") return write(probe(*state_, req, path));
    if (!head_) {
      return write(plain_response(req.version(), req.keep_alive(), http::status::not_found,
                                  "not found\n"));
    }
    unsigned version = req.version();
    bool keep_alive = req.keep_alive();
    auto once = std::make_shared<std::atomic<bool>>(false);
    Respond respond = [self = shared_from_this(), once, version,
                       keep_alive](HttpResponse response) {
      if (once->exchange(true)) return;
      net::post(self->stream_.get_executor(),
                [self, version, keep_alive, response = std::move(response)]() mutable {
                  if (response.stream && !self->head_method_) {
                    return self->start_stream(std::move(response), version, keep_alive);
                  }
                  // A HEAD gets the stream's header and no body: the stream ends here.
                  if (response.stream) response.stream->close();
                  self->write(to_beast(std::move(response), version, keep_alive));
                });
    };
    HttpRequest request = std::move(*head_);
    head_.reset();
    request.body = std::move(req.body());
    Handler handler;
    {
      std::lock_guard lock(state_->mutex);
      if (!state_->handler) {
        // Bound but not ready: the request waits for the handler (see set_handler).
        state_->waiting.emplace_back(std::move(request), std::move(respond));
        return;
      }
      handler = state_->handler;
    }
    handler(std::move(request), std::move(respond));
  }

  // The request could not be read completely: answer and close the connection.
  void reply_error(http::status status, std::string body) {
    write(plain_response(11, false, status, std::move(body)));
  }

  void write(http::response<http::string_body> res) {
    response_ = std::move(res);
    if (state_->draining.load(std::memory_order_acquire)) response_.keep_alive(false);
    // HEAD, on every path: the GET's headers (Content-Length included) and no body. A body
    // would be read by a pipelining client as the start of its next response.
    if (head_method_) response_.body().clear();
    state_->count_response(response_.result_int());
    bool keep_alive = response_.keep_alive();
    stream_.expires_after(options().idle_timeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        self->paid();
                        if (ec) return self->close();
                        if (!keep_alive) return self->linger();
                        self->read();
                      });
  }

  // ---- streamed responses (StreamBody) ----
  // The header goes out at once with chunked encoding; then every wake-up sends what the
  // writer queued as one chunk, until the body ends (last chunk; the connection goes on
  // with its next request) or aborts (the connection closes). Meanwhile one read watches
  // the socket, so a client that goes away closes the body even when nothing is being
  // written; bytes it reads (a pipelined request) wait in buffer_ until the body is over.

  void start_stream(HttpResponse&& r, unsigned version, bool keep_alive) {
    body_ = std::move(r.stream);
    state_->streams_open.fetch_add(1, std::memory_order_relaxed);
    state_->count_response(static_cast<unsigned>(r.status));
    keep_alive = keep_alive && !state_->draining.load(std::memory_order_acquire);
    stream_keep_alive_ = keep_alive;
    auto head = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(r.status), version);
    head->set(http::field::server, "dorm");
    for (auto& [name, value] : r.headers) head->insert(name, value);
    head->keep_alive(keep_alive);
    head->chunked(true);
    // Keep the kernel's share of an unread stream small, so what a slow reader leaves
    // unsent shows in StreamBody::unsent() instead of piling up in socket buffers.
    beast::error_code ignored;
    stream_.socket().set_option(net::socket_base::send_buffer_size(kStreamSendBuffer), ignored);
    stream_.expires_never();
    // An open stream holds no read buffer: watch() waits for readability instead (most of
    // a busy server's connections can be idle streams; 4 KiB each adds up).
    if (buffer_.size() == 0) buffer_.shrink_to_fit();
    // The head leaves in one write with what the body already holds (a priming event, a
    // resume's replay): a client that has the head then has the event it resumes from,
    // even if this process dies right after. Written apart, a kill between the two left
    // a client with an open stream and no event id, which it cannot resume: it hung.
    auto first = body_->take();
    if (first.abort) return stream_failed();
    http::response_serializer<http::empty_body> serializer(*head);
    serializer.split(true);
    auto out = std::make_shared<std::string>();
    beast::error_code ec;
    serializer.next(ec, [&](beast::error_code&, const auto& buffers) { *out = beast::buffers_to_string(buffers); });
    if (ec) return stream_failed();
    std::size_t payload = first.bytes.size();
    if (payload > 0) *out += beast::buffers_to_string(http::make_chunk(net::buffer(first.bytes)));
    writing_ = true;
    net::async_write(stream_, net::buffer(*out),
                     [self = shared_from_this(), out, payload](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       self->paid();
                       if (ec || !self->body_) return self->stream_failed();
                       self->body_->sent(payload);
                       self->watch();
                       std::weak_ptr<Connection> weak = self;
                       // Attaching wakes the pump once: what came meanwhile, and the end.
                       self->body_->attach([weak] {
                         if (auto c = weak.lock()) {
                           net::post(c->stream_.get_executor(), [c] { c->pump(); });
                         }
                       });
                     });
  }

  void pump() {
    if (!body_) return;
    // An abort must not wait for a write that a client who reads nothing never finishes.
    if (body_->aborted()) return stream_failed();
    if (writing_) return;
    auto pending = body_->take();
    if (pending.abort) return stream_failed();
    // Once the body is complete, a client that stops reading cannot hold the connection.
    if (pending.end) stream_.expires_after(options().idle_timeout);
    if (!pending.bytes.empty()) {
      auto data = std::make_shared<std::string>(std::move(pending.bytes));
      writing_ = true;
      net::async_write(stream_, http::make_chunk(net::buffer(*data)),
                       [self = shared_from_this(), data](beast::error_code ec, std::size_t) {
                         self->writing_ = false;
                         if (ec) return self->stream_failed();
                         if (self->body_) self->body_->sent(data->size());
                         self->pump();
                       });
      return;
    }
    if (!pending.end) return;
    writing_ = true;
    net::async_write(stream_, http::make_chunk_last(),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec) return self->stream_failed();
                       self->stream_ended();
                     });
  }

  // Waits for the socket to become readable rather than reading into a buffer, so an
  // idle stream holds none. Readable means bytes (a pipelined request, taken into
  // buffer_ to wait for the body's end) or the client's close; a wake-up can also be
  // stale (bytes an earlier read already took), and then the watch goes on.
  void watch() {
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      self->watching_ = false;
      if (!ec && !self->take_available(ec)) return self->watch();
      if (self->body_) {
        // Still streaming: an error means the client is gone.
        if (ec) self->stream_failed();
        return;
      }
      if (ec && ec != net::error::operation_aborted) return self->close();
      self->after_stream();
    });
  }

  // Reads what the socket holds into buffer_ without blocking: true with the bytes, or
  // with eof or an error in `ec`; false when there was nothing to read after all.
  bool take_available(beast::error_code& ec) {
    auto& socket = stream_.socket();
    socket.non_blocking(true, ec);
    if (ec) return true;
    std::size_t want = std::max<std::size_t>(socket.available(ec), 512);
    std::size_t n = ec ? 0 : socket.read_some(buffer_.prepare(want), ec);
    beast::error_code ignored;
    socket.non_blocking(false, ignored);
    if (ec == net::error::would_block || ec == net::error::try_again) {
      ec = {};
      if (buffer_.size() == 0) buffer_.shrink_to_fit();
      return false;
    }
    if (!ec) buffer_.commit(n);
    return true;
  }

  // The body's end was sent.
  void stream_ended() {
    // The client's close may have been seen first (watch() → stream_failed()) while the
    // last chunk's write was already done: the stream is over, closed once.
    if (!body_) return;
    auto body = std::move(body_);
    state_->streams_open.fetch_sub(1, std::memory_order_relaxed);
    body->close();
    // The watching read is cancelled and resumes the connection in its handler; without
    // one pending, resume now.
    beast::error_code ignored;
    if (watching_) {
      stream_.socket().cancel(ignored);
    } else {
      after_stream();
    }
  }

  void after_stream() {
    if (!stream_keep_alive_ || state_->draining.load(std::memory_order_acquire)) return linger();
    read();
  }

  // The connection failed or the writer aborted: close it, and the body with it.
  void stream_failed() {
    auto body = std::move(body_);
    close();
    if (body) {
      state_->streams_open.fetch_sub(1, std::memory_order_relaxed);
      body->close();
    }
  }

  // Ends a connection whose client may still be sending (a refused body, say): stop
  // sending, then read and discard until the client closes, for a bounded time. Closing
  // with unread bytes would reset the connection, and the client could lose the answer
  // it has not read yet.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(options().header_timeout);
    drain();
  }

  void drain() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(64 * 1024),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->drain();
                            });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
    paid();
  }

  // The current request is owed a response (ServerState::owed), until paid() says its
  // response is written or the connection is gone. Both are idempotent.
  void owe() {
    if (owing_) return;
    owing_ = true;
    state_->owe();
  }
  void paid() {
    if (!owing_) return;
    owing_ = false;
    state_->pay();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // The request being read, as the handler will see it, once its header is (endpoint
  // path only); the body joins it in dispatch_request.
  std::optional<HttpRequest> head_;
  bool head_method_ = false;  // the request being answered is a HEAD
  http::response<http::string_body> response_;
  std::shared_ptr<ServerState> state_;
  std::shared_ptr<StreamBody> body_;  // set while a streamed response is being sent
  bool stream_keep_alive_ = false;
  bool writing_ = false;
  bool watching_ = false;
  bool idle_ = false;  // waiting for the first byte of the next request
  int requests_ = 0;   // requests whose header was read on this connection
  bool owing_ = false;  // counted in ServerState::owed
};

}  // namespace

struct HttpServer::Impl {
  net::io_context ioc;
  // The I/O threads run until the server is destroyed, even with no connection and the
  // listener closed (a draining server still posts to them).
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  std::shared_ptr<ServerState> state = std::make_shared<ServerState>();
  ListenAddress local;
  std::vector<std::thread> threads;
  bool listener_closed = false;  // only touched on the acceptor's strand
  bool handing_off = false;      // only touched on the acceptor's strand
  net::steady_timer handoff{acceptor.get_executor()};
  // The accept loop's state at the fd limit; on the acceptor's strand.
  net::steady_timer accept_pause{acceptor.get_executor()};
  std::uint64_t accept_failures = 0;  // since the last accept_failed line
  std::chrono::steady_clock::time_point last_accept_log{};
  beast::file reserve_fd;  // held so a connection can be refused at the fd limit
  // Connections refused over max_connections since the last connection_limit line.
  std::uint64_t refused_over_limit = 0;
  std::chrono::steady_clock::time_point last_limit_log{};

  // Closes the listening socket; on the acceptor's strand.
  void close_acceptor() {
    if (listener_closed) return;
    beast::error_code ignored;
    handoff.cancel();
    accept_pause.cancel();
    if (handing_off) {
      // The steering program belongs to the port's group, not to this socket, and would
      // outlive it: the next successor to bind (index 1 again) would then take every new
      // connection from the moment it binds, long before the server in front of it drains.
      int unused = 0;
      setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, &unused,
                 sizeof unused);
    }
    accept_backlog();
    acceptor.close(ignored);
    listener_closed = true;
  }

  // Runs `fn` on each live connection's strand.
  template <typename Fn>
  void each_connection(Fn fn) {
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard lock(state->connections_mutex);
      live.reserve(state->connections.size());
      for (auto& [_, weak] : state->connections) {
        if (auto c = weak.lock()) live.push_back(std::move(c));
      }
    }
    for (auto& c : live) net::dispatch(c->executor(), [c, fn] { fn(*c); });
  }

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      // A connection accepted just before the listener closed is served all the same:
      // dropping it would reset a client the kernel already took.
      if (!ec) admit(std::move(socket));
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) return accept_failed(ec);
      accept();
    });
  }

  // On the acceptor's strand: serves the connection, or refuses it over the limit.
  void admit(tcp::socket socket) {
    std::size_t open = 0;
    {
      std::lock_guard lock(state->connections_mutex);
      open = state->connections.size();
    }
    const std::size_t limit = state->options.max_connections;
    if (limit == 0 || open < limit) {
      std::make_shared<Connection>(std::move(socket), state)->start();
      return;
    }
    ++refused_over_limit;
    auto now = std::chrono::steady_clock::now();
    if (now - last_limit_log >= kAcceptLogInterval) {
      log::warn("connection_limit", {{"open", static_cast<std::int64_t>(open)},
                                     {"limit", static_cast<std::int64_t>(limit)},
                                     {"refused", static_cast<std::int64_t>(refused_over_limit)}});
      refused_over_limit = 0;
      last_limit_log = now;
    }
    refuse(socket, "The server has " + std::to_string(open) +
                       " connections open, its limit; try again.\n");
  }

  // Answers a fresh connection 503 with `Connection: close` and closes it. A fresh
  // socket's send buffer takes the few bytes whole, so the blocking write cannot wait.
  void refuse(tcp::socket& socket, std::string why) {
    state->count_response(503);
    beast::error_code ec;
    auto res = plain_response(11, false, http::status::service_unavailable, std::move(why));
    res.set(http::field::retry_after, "1");
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_send, ec);
    // Unread request bytes would turn the close into a reset, which can discard the answer
    // at the client before it reads it: take what has arrived (a request's head, bounded).
    socket.non_blocking(true, ec);
    std::array<char, 4096> unread;
    for (int i = 0; i < 16 && !ec; ++i) socket.read_some(net::buffer(unread), ec);
    socket.close(ec);
  }

  // On the acceptor's strand. At the fd limit the connection stays queued and every retry
  // fails at once, so: refuse that connection with the reserve fd, pause, then go on.
  void accept_failed(const beast::error_code& ec) {
    ++accept_failures;
    auto now = std::chrono::steady_clock::now();
    if (now - last_accept_log >= kAcceptLogInterval) {
      log::warn("accept_failed", {{"error", ec.message()},
                                  {"failures", static_cast<std::int64_t>(accept_failures)}});
      accept_failures = 0;
      last_accept_log = now;
    }
    if (ec == net::error::no_descriptors || ec.value() == ENFILE) refuse_one();
    accept_pause.expires_after(kAcceptPause);
    accept_pause.async_wait([this](beast::error_code waited) {
      if (!waited && acceptor.is_open()) accept();
    });
  }

  // Frees the reserve fd, takes the first queued connection with it, answers it 503 with
  // `Connection: close` and closes it, then takes the reserve again: the client learns
  // at once that the server is out of descriptors instead of waiting in the queue.
  void refuse_one() {
    if (!reserve_fd.is_open()) return reopen_reserve();
    beast::error_code ec;
    reserve_fd.close(ec);
    if (acceptor.non_blocking(true, ec); !ec) {
      tcp::socket socket{ioc};
      if (acceptor.accept(socket, ec); !ec) {
        refuse(socket, "The server has no file descriptor left for this connection; try again.\n");
      }
    }
    reopen_reserve();
  }

  void reopen_reserve() {
    beast::error_code ec;
    reserve_fd.open("/dev/null", beast::file_mode::read, ec);
  }

  // Takes the connections the kernel has already queued on the listener, so that closing
  // it resets none of them. With --reuse-port the kernel spreads new connections over the
  // old process and its bound successor until the old listener closes; a connection it
  // gave the old one that was not yet accepted would be reset by the close although a
  // successor is listening. Each is served as the server now serves (draining: 503 and
  // `Connection: close` for what it no longer takes). A draining server sharing its port
  // has already steered new handshakes to its successor (begin_drain), so none completes
  // here between the last accept and the close; without a successor that window is
  // microseconds, against the milliseconds the asynchronous accept loop can lag behind on
  // a busy machine.
  void accept_backlog() {
    beast::error_code ec;
    if (acceptor.non_blocking(true, ec); ec) return;
    for (;;) {
      tcp::socket socket{net::make_strand(ioc)};
      if (acceptor.accept(socket, ec); ec) return;  // would_block: nothing is queued
      std::make_shared<Connection>(std::move(socket), state)->start();
    }
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const Options& options) {
  auto impl = std::make_unique<Impl>();
  impl->state->options = options;

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
  if (options.reuse_port) {
    using reuse_port = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    if (acceptor.set_option(reuse_port(true), ec); ec) {
      return Error{ErrorCode::io_error, "cannot set SO_REUSEPORT: " + ec.message()};
    }
  }
  if (acceptor.bind(endpoint, ec); ec) {
    return Error{ErrorCode::io_error, "cannot bind " + where + ": " + ec.message()};
  }
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
    return Error{ErrorCode::io_error, "cannot listen on " + where + ": " + ec.message()};
  }
  tcp::endpoint bound = acceptor.local_endpoint(ec);
  impl->local = ListenAddress{bound.address().to_string(), bound.port()};

  impl->reopen_reserve();
  impl->accept();
  int n = options.io_threads < 1 ? 1 : options.io_threads;
  for (int i = 0; i < n; ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  if (impl_->threads.empty()) return;
  close_listener();
  close_connections();
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

ListenAddress HttpServer::local_address() const { return impl_->local; }

void HttpServer::set_handler(Handler handler) {
  std::vector<std::pair<HttpRequest, Respond>> waiting;
  {
    std::lock_guard lock(impl_->state->mutex);
    impl_->state->handler = handler;
    waiting = std::move(impl_->state->waiting);
    impl_->state->waiting.clear();
  }
  for (auto& [request, respond] : waiting) handler(std::move(request), std::move(respond));
}

void HttpServer::set_ready(bool ready) {
  impl_->state->ready.store(ready, std::memory_order_release);
}

void HttpServer::set_unready_reason(std::string reason) {
  std::lock_guard lock(impl_->state->unready_mutex);
  impl_->state->unready_reason = std::move(reason);
}

void HttpServer::close_listener() {
  if (impl_->ioc.stopped()) return;
  std::promise<void> done;
  auto closed = done.get_future();
  net::dispatch(impl_->acceptor.get_executor(), [this, &done] {
    impl_->close_acceptor();
    done.set_value();
  });
  closed.wait();
}

// Closing a listener that shares its port (SO_REUSEPORT) resets every connection in its
// accept queue: the kernel completed their handshakes, so their clients see a reset, not a
// refusal, and do not try the successor. So a draining server that shares its port first
// steers new connections to the successor, keeps accepting (and answering, draining) what
// reached it before, and closes only after kListenerHandoff.
//
// The steering is a classic BPF program for the port's reuseport group that picks the
// socket at index 1. Sockets sit in the group in the order they bound, and a closing one
// is replaced by the last, so in a rolling deploy (one server and its successor at a
// time) the draining server is index 0 and the successor index 1. With no successor the
// index is out of range and the kernel falls back to its hash, i.e. to this server. With
// three or more servers sharing the port the program picks one of the others, not always
// away from this one: closing then resets what was queued here, as without the program.
void HttpServer::begin_drain() {
  impl_->state->ready.store(false, std::memory_order_release);
  impl_->state->draining.store(true, std::memory_order_release);
  if (!impl_->state->options.reuse_port) {
    close_listener();
  } else {
    net::dispatch(impl_->acceptor.get_executor(), [impl = impl_.get()] {
      if (impl->listener_closed || impl->handing_off) return;
      impl->handing_off = true;
      sock_filter pick_second[] = {{BPF_RET | BPF_K, 0, 0, 1}};
      sock_fprog program{1, pick_second};
      if (setsockopt(impl->acceptor.native_handle(), SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF,
                     &program, sizeof program) != 0) {
        log::warn("listener_handoff_unsteered", {{"error", std::strerror(errno)}});
      }
      impl->handoff.expires_after(kListenerHandoff);
      impl->handoff.async_wait([impl](beast::error_code ec) {
        if (!ec) impl->close_acceptor();
      });
    });
  }
  impl_->each_connection([](Connection& c) { c.drain_now(); });
}

bool HttpServer::finish_accepted(std::chrono::steady_clock::time_point deadline) {
  close_listener();
  auto& state = *impl_->state;
  std::unique_lock lock(state.owed_mutex);
  return state.owed_paid.wait_until(
      lock, deadline, [&] { return state.owed.load(std::memory_order_acquire) == 0; });
}

std::size_t HttpServer::unanswered_requests() const {
  return impl_->state->owed.load(std::memory_order_acquire);
}

void HttpServer::close_connections() {
  impl_->each_connection([](Connection& c) { c.abort_now(); });
}

std::size_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->state->connections_mutex);
  return impl_->state->connections.size();
}

std::size_t HttpServer::open_streams() const {
  return impl_->state->streams_open.load(std::memory_order_relaxed);
}

std::vector<std::pair<int, std::uint64_t>> HttpServer::responses_by_status() const {
  std::vector<std::pair<int, std::uint64_t>> out;
  const auto& counts = impl_->state->responses;
  for (std::size_t code = 0; code < counts.size(); ++code) {
    if (auto n = counts[code].load(std::memory_order_relaxed); n > 0) {
      out.emplace_back(static_cast<int>(code), n);
    }
  }
  return out;
}

}  // namespace dorm::mcp

namespace dorm::mcp {

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& field : headers) {
    if (field.name == name) return std::string_view(field.value);
  }
  return std::nullopt;
}

int HttpRequest::header_lines(std::string_view name) const {
  for (const auto& field : headers) {
    if (field.name == name) return field.lines;
  }
  return 0;
}

}  // namespace dorm::mcp
