// The translation unit of NodeForwarder that includes Beast and Asio (see
// node_forwarder.hpp). Each forwarded request is an Exchange on a strand of its own:
// resolve, connect, send, read the answer's header, then the body — whole, or relayed to
// a StreamBody as it arrives.
#include "dorm/mcp/node_forwarder.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>

#include <array>
#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "dorm/mcp/jsonrpc.hpp"

namespace dorm::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// Hop-by-hop fields (RFC 9110 §7.6.1), and the framing each side sets for itself: never
// passed on, in either direction.
bool hop_by_hop(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kFields = {
      "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
      "te",         "trailer",    "transfer-encoding", "upgrade",          "content-length"};
  for (auto field : kFields) {
    if (beast::iequals(name, field)) return true;
  }
  return false;
}

struct Peer {
  std::string host;  // without brackets
  std::string port;
  std::string authority;  // for Host
};

Result<Peer> parse_peer(const std::string& address) {
  auto parsed = boost::urls::parse_absolute_uri(address);
  if (!parsed || parsed->scheme() != "http" || parsed->host_address().empty()) {
    return Error{ErrorCode::invalid_argument,
                 "the node's advertised address '" + address + "' is not an http:// URL"};
  }
  Peer peer;
  peer.host = parsed->host_address();
  peer.port = parsed->has_port() ? std::string(parsed->port()) : "80";
  peer.authority = std::string(parsed->encoded_authority());
  return peer;
}

HttpResponse bad_gateway(std::string message) {
  return HttpResponse{502,
                      {{"Content-Type", "application/json"}, {"Retry-After", "1"}},
                      error_response(std::nullopt, kTransportError, message)};
}

}  // namespace

struct NodeForwarder::Impl {
  explicit Impl(Options o) : options(std::move(o)), work(net::make_work_guard(ioc)) {}

  Options options;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> forwarded{0};
  std::atomic<std::uint64_t> unreachable{0};
  std::atomic<bool> stopped{false};
};

namespace {

// One forwarded request, from resolving the node to the end of its answer. Lives as long
// as a handler holds it; every handler runs on its strand.
struct Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(NodeForwarder::Impl& impl, Peer peer, std::string address, Respond respond,
           NodeForwarder::Unreachable unreachable)
      : impl(impl),
        strand(net::make_strand(impl.ioc)),
        resolver(strand),
        stream(strand),
        peer(std::move(peer)),
        address(std::move(address)),
        respond(std::move(respond)),
        on_unreachable(std::move(unreachable)) {}

  ~Exchange() {
    // Cut off (the forwarder stopped, or the node went away mid-stream): the client's
    // stream must not stay open with nothing behind it.
    if (body) body->abort();
  }

  void build(const HttpRequest& request) {
    req.version(11);
    req.method_string(request.method);
    req.target(request.target);
    for (const auto& field : request.headers) {
      if (hop_by_hop(field.name) || field.name == "host" || field.name == "expect") continue;
      req.insert(field.name, field.value);
    }
    req.set(http::field::host, peer.authority);
    req.set(kForwardedByHeader, impl.options.node_id);
    req.keep_alive(false);
    req.body() = request.body;
    if (!request.body.empty() || request.method == "POST") req.prepare_payload();
  }

  void start() {
    stream.expires_after(impl.options.connect_timeout);
    resolver.async_resolve(peer.host, peer.port,
                           [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type found) {
                             if (ec) return self->unreachable("cannot resolve " + self->peer.host + ": " + ec.message());
                             self->stream.async_connect(found, [self](beast::error_code ec, const tcp::endpoint&) {
                               if (ec) return self->unreachable("cannot connect: " + ec.message());
                               self->send();
                             });
                           });
  }

  void send() {
    stream.expires_after(impl.options.response_timeout);
    http::async_write(stream, req, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->fail("sending the request: " + ec.message());
      self->parser.emplace();
      self->parser->header_limit(64 * 1024);
      // The answer to HEAD has a Content-Length and no body.
      if (self->req.method() == http::verb::head) self->parser->skip(true);
      http::async_read_header(self->stream, self->buffer, *self->parser,
                              [self](beast::error_code ec, std::size_t) {
                                if (ec) return self->fail("no answer: " + ec.message());
                                self->answer_head();
                              });
    });
  }

  void answer_head() {
    auto& head = parser->get();
    head_response = HttpResponse(head.result_int());
    for (const auto& field : head) {
      std::string_view name(field.name_string().data(), field.name_string().size());
      // Server names the relaying server, which sets its own: passed on, it came twice.
      if (hop_by_hop(name) || beast::iequals(name, "server")) continue;
      head_response.headers.emplace_back(std::string(name), std::string(field.value()));
    }
    if (parser->content_length() && !parser->chunked()) {
      if (*parser->content_length() > impl.options.max_body_bytes) {
        return fail("its answer of " + std::to_string(*parser->content_length()) + " bytes is over the " +
                    std::to_string(impl.options.max_body_bytes) + "-byte limit");
      }
      whole.reserve(*parser->content_length());
      streaming = false;
    } else {
      // Chunked or ended by the close: relayed as it comes, for as long as it lasts.
      streaming = true;
      parser->body_limit(boost::none);
      stream.expires_never();
      body = std::make_shared<StreamBody>();
      std::weak_ptr<Exchange> weak = shared_from_this();
      body->on_closed([weak] {
        // The client went away (or the relay ended): the other node's connection goes too.
        if (auto self = weak.lock()) {
          net::post(self->strand, [self] {
            beast::error_code ignored;
            self->stream.socket().close(ignored);
          });
        }
      });
      HttpResponse res = std::move(head_response);
      res.stream = body;
      answer(std::move(res));
    }
    if (parser->is_done()) return finish();
    read_body();
  }

  void read_body() {
    auto& b = parser->get().body();
    b.data = chunk.data();
    b.size = chunk.size();
    // read_some: back as soon as some of the body arrived (async_read would wait for the
    // buffer to fill or the body to end, holding back a stream's events).
    http::async_read_some(stream, buffer, *parser, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == http::error::need_buffer) ec = {};
      std::size_t got = self->chunk.size() - self->parser->get().body().size;
      if (got > 0 && !self->take(std::string_view(self->chunk.data(), got))) return;
      if (ec) {
        if (self->streaming) {
          // The other node went away mid-stream: the client resumes from its last event.
          self->body->abort();
          self->body.reset();
          return;
        }
        return self->fail("its answer broke off: " + ec.message());
      }
      if (self->parser->is_done()) return self->finish();
      self->read_body();
    });
  }

  // Bytes of the answer's body; false once the relay is over.
  bool take(std::string_view bytes) {
    if (!streaming) {
      whole.append(bytes);
      return true;
    }
    if (body->write(bytes) > impl.options.max_unsent_bytes || body->closed()) {
      body->abort();
      body.reset();
      return false;
    }
    return true;
  }

  void finish() {
    if (streaming) {
      body->end();
      body.reset();
      return;
    }
    head_response.body = std::move(whole);
    answer(std::move(head_response));
  }

  void answer(HttpResponse res) {
    if (!respond) return;
    auto fn = std::move(respond);
    respond = nullptr;
    on_unreachable = nullptr;
    fn(std::move(res));
  }

  void fail(const std::string& why) {
    answer(bad_gateway("the node serving this session (" + address + ") failed: " + why));
  }

  void unreachable(std::string why) {
    if (!on_unreachable) return;
    impl.unreachable.fetch_add(1, std::memory_order_relaxed);
    auto fn = std::move(on_unreachable);
    on_unreachable = nullptr;
    respond = nullptr;
    fn(address + ": " + why);
  }

  NodeForwarder::Impl& impl;
  net::strand<net::io_context::executor_type> strand;
  tcp::resolver resolver;
  beast::tcp_stream stream;
  Peer peer;
  std::string address;
  Respond respond;
  NodeForwarder::Unreachable on_unreachable;
  http::request<http::string_body> req;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::array<char, 16 * 1024> chunk{};
  HttpResponse head_response;
  std::string whole;
  bool streaming = false;
  std::shared_ptr<StreamBody> body;
};

}  // namespace

Result<std::unique_ptr<NodeForwarder>> NodeForwarder::start(Options options) {
  if (options.node_id.empty()) return Error{ErrorCode::invalid_argument, "a forwarder needs this node's id"};
  if (options.io_threads < 1) return Error{ErrorCode::invalid_argument, "a forwarder needs an I/O thread"};
  auto impl = std::make_unique<Impl>(std::move(options));
  for (int i = 0; i < impl->options.io_threads; ++i) {
    impl->threads.emplace_back([io = &impl->ioc] { io->run(); });
  }
  return std::unique_ptr<NodeForwarder>(new NodeForwarder(std::move(impl)));
}

NodeForwarder::NodeForwarder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NodeForwarder::~NodeForwarder() {
  stop();
}

void NodeForwarder::forward(const HttpRequest& request, const std::string& address, Respond respond,
                            Unreachable unreachable) const {
  if (impl_->stopped.load()) return;
  auto peer = parse_peer(address);
  if (!peer) return respond(bad_gateway(peer.error().message));
  impl_->forwarded.fetch_add(1, std::memory_order_relaxed);
  auto exchange = std::make_shared<Exchange>(*impl_, std::move(*peer), address, std::move(respond),
                                             std::move(unreachable));
  exchange->build(request);
  net::post(exchange->strand, [exchange] { exchange->start(); });
}

const std::string& NodeForwarder::node_id() const {
  return impl_->options.node_id;
}

std::uint64_t NodeForwarder::forwarded() const {
  return impl_->forwarded.load(std::memory_order_relaxed);
}

std::uint64_t NodeForwarder::unreachable() const {
  return impl_->unreachable.load(std::memory_order_relaxed);
}

void NodeForwarder::stop() {
  if (impl_->stopped.exchange(true)) return;
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace dorm::mcp
