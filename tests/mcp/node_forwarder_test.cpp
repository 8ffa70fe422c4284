// NodeForwarder against a real HttpServer on loopback as "the other node" (HttpServer has
// its own tests): what is sent on, what comes back, streams relayed both ways, and the
// failures — unreachable, bad address, a node that hangs up before answering.
#include "dorm/mcp/node_forwarder.hpp"

#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

using dorm::mcp::HttpRequest;
using dorm::mcp::HttpResponse;
using dorm::mcp::HttpServer;
using dorm::mcp::NodeForwarder;
using dorm::mcp::Respond;
using dorm::mcp::StreamBody;

namespace {

constexpr auto kBound = std::chrono::seconds(10);

std::unique_ptr<HttpServer> other_node(dorm::mcp::Handler handler) {
  HttpServer::Options options;
  options.listen = {"127.0.0.1", 0};
  options.io_threads = 1;
  auto server = HttpServer::start(options);
  REQUIRE(server.ok());
  (*server)->set_handler(std::move(handler));
  return std::move(server).value();
}

std::string address_of(const HttpServer& server) {
  return "http://" + server.local_address().to_string() + "/mcp";
}

std::unique_ptr<NodeForwarder> forwarder() {
  NodeForwarder::Options options;
  options.node_id = "n1";
  options.connect_timeout = std::chrono::milliseconds(2'000);
  options.response_timeout = std::chrono::milliseconds(5'000);
  auto started = NodeForwarder::start(options);
  REQUIRE(started.ok());
  return std::move(started).value();
}

// What a forward produced: an answer, or the unreachable callback's reason.
struct Outcome {
  std::optional<HttpResponse> response;
  std::optional<std::string> unreachable;
};

std::future<Outcome> forward(const NodeForwarder& fwd, const HttpRequest& request, const std::string& address) {
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  fwd.forward(
      request, address, [promise](HttpResponse res) { promise->set_value(Outcome{std::move(res), std::nullopt}); },
      [promise](std::string why) { promise->set_value(Outcome{std::nullopt, std::move(why)}); });
  return future;
}

Outcome settle(std::future<Outcome>& future) {
  REQUIRE(future.wait_for(kBound) == std::future_status::ready);
  return future.get();
}

// The client's side of a relayed stream: what the connection would send, collected.
class StreamReader {
 public:
  explicit StreamReader(std::shared_ptr<StreamBody> body) : body_(std::move(body)) {
    body_->attach([this] {
      std::lock_guard lock(mutex_);
      ++wakes_;
      cv_.notify_all();
    });
  }
  // Takes what is queued until `done(text, ended, aborted)` holds; false at the bound.
  template <class Done>
  bool until(Done done) {
    std::unique_lock lock(mutex_);
    auto deadline = std::chrono::steady_clock::now() + kBound;
    for (;;) {
      const int seen = wakes_;
      lock.unlock();
      auto pending = body_->take();
      if (!pending.bytes.empty()) body_->sent(pending.bytes.size());
      lock.lock();
      text_ += pending.bytes;
      ended_ = ended_ || pending.end;
      aborted_ = aborted_ || pending.abort || body_->aborted();
      if (done(text_, ended_, aborted_)) return true;
      if (!cv_.wait_until(lock, deadline, [&] { return wakes_ != seen; })) return false;
    }
  }

 private:
  std::shared_ptr<StreamBody> body_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int wakes_ = 0;
  std::string text_;
  bool ended_ = false;
  bool aborted_ = false;
};

HttpRequest client_post() {
  HttpRequest request;
  request.method = "POST";
  request.target = "/mcp?trace=1";
  request.headers = {{"host", "balancer.example:443"},
                     {"authorization", "Bearer t0ken"},
                     {"mcp-session-id", "s-123"},
                     {"connection", "keep-alive"},
                     {"te", "trailers"},
                     {"accept", "application/json, text/event-stream"},
                     {"content-type", "application/json"}};
  request.body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  return request;
}

}  // namespace

TEST_CASE("forwarder: a request goes on as the client sent it, and a whole answer comes back") {
  std::promise<HttpRequest> seen;
  auto node = other_node([&seen](HttpRequest request, Respond respond) {
    seen.set_value(request);
    respond(HttpResponse{202,
                         {{"Content-Type", "application/json"}, {"Mcp-Session-Id", "s-123"}, {"X-Extra", "1"}},
                         R"({"jsonrpc":"2.0","id":1,"result":{}})"});
  });
  auto fwd = forwarder();
  auto future = forward(*fwd, client_post(), address_of(*node));
  auto outcome = settle(future);
  REQUIRE(outcome.response);
  CHECK(outcome.response->status == 202);
  CHECK(outcome.response->body == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK_FALSE(outcome.response->stream);
  auto header = [&](std::string_view name) -> std::string {
    for (const auto& [k, v] : outcome.response->headers) {
      std::string lower(k);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == name) return v;
    }
    return "(absent)";
  };
  CHECK(header("mcp-session-id") == "s-123");
  CHECK(header("x-extra") == "1");
  // Framing is the relaying server's own business.
  CHECK(header("content-length") == "(absent)");
  CHECK(header("connection") == "(absent)");
  // The other node's Server field stays behind: the relaying server sends its own, once.
  CHECK(header("server") == "(absent)");

  auto sent = seen.get_future().get();
  CHECK(sent.method == "POST");
  CHECK(sent.target == "/mcp?trace=1");
  CHECK(sent.body == R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(sent.header("authorization") == "Bearer t0ken");
  CHECK(sent.header("mcp-session-id") == "s-123");
  CHECK(sent.header("accept") == "application/json, text/event-stream");
  CHECK(sent.header("host") == node->local_address().to_string());
  CHECK(sent.header("dorm-forwarded-by") == "n1");
  CHECK_FALSE(sent.header("te"));
  CHECK(sent.header("connection") != "keep-alive");
  CHECK(fwd->forwarded() == 1);
  CHECK(fwd->unreachable() == 0);
}

TEST_CASE("forwarder: a streamed answer is relayed as it is written, and ends when it ends") {
  auto upstream = std::make_shared<StreamBody>();
  auto node = other_node([upstream](HttpRequest, Respond respond) {
    HttpResponse head(200, {{"Content-Type", "text/event-stream"}});
    head.stream = upstream;
    upstream->write("id: 1\ndata: first\n\n");
    respond(std::move(head));
  });
  auto fwd = forwarder();
  auto future = forward(*fwd, client_post(), address_of(*node));
  auto outcome = settle(future);
  REQUIRE(outcome.response);
  CHECK(outcome.response->status == 200);
  REQUIRE(outcome.response->stream);
  StreamReader reader(outcome.response->stream);
  CHECK(reader.until([](const std::string& text, bool, bool) { return text.find("data: first") != std::string::npos; }));
  // Written after the head went: it still arrives, and the end with it.
  upstream->write("id: 2\ndata: second\n\n");
  upstream->end();
  std::string all;
  CHECK(reader.until([&all](const std::string& text, bool ended, bool) {
    all = text;
    return ended;
  }));
  CHECK(all == "id: 1\ndata: first\n\nid: 2\ndata: second\n\n");
}

namespace {

// A stream from the other node, relayed to the test as far as its first event: what the
// two stream tests below start from.
struct PrimedRelay {
  std::shared_ptr<StreamBody> upstream = std::make_shared<StreamBody>();
  std::unique_ptr<HttpServer> node;
  std::unique_ptr<NodeForwarder> fwd = forwarder();
  std::shared_ptr<StreamBody> relayed;
  std::unique_ptr<StreamReader> reader;

  PrimedRelay() {
    node = other_node([up = upstream](HttpRequest, Respond respond) {
      HttpResponse head(200, {{"Content-Type", "text/event-stream"}});
      head.stream = up;
      up->write(": primed\n\n");
      respond(std::move(head));
    });
    auto future = forward(*fwd, client_post(), address_of(*node));
    auto outcome = settle(future);
    REQUIRE(outcome.response);
    REQUIRE(outcome.response->stream);
    relayed = outcome.response->stream;
    reader = std::make_unique<StreamReader>(relayed);
    REQUIRE(reader->until([](const std::string& text, bool, bool) { return !text.empty(); }));
  }
};

}  // namespace

TEST_CASE("forwarder: a client that goes away closes the other node's stream") {
  std::promise<void> upstream_closed;  // outlives the relay, whose end may close it
  PrimedRelay relay;
  relay.upstream->on_closed([&upstream_closed] { upstream_closed.set_value(); });
  relay.relayed->close();  // the client's connection is gone
  CHECK(upstream_closed.get_future().wait_for(kBound) == std::future_status::ready);
}

TEST_CASE("forwarder: the other node going away aborts the relayed stream") {
  PrimedRelay relay;
  relay.upstream->abort();
  bool ended_cleanly = false;
  CHECK(relay.reader->until([&ended_cleanly](const std::string&, bool ended, bool aborted) {
    ended_cleanly = ended;
    return aborted || ended;
  }));
  CHECK_FALSE(ended_cleanly);
}

TEST_CASE("forwarder: a node nobody answers for is unreachable, and nothing is answered") {
  // A port that was just free: nothing listens there.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor probe(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  auto port = probe.local_endpoint().port();
  probe.close();
  auto fwd = forwarder();
  auto future = forward(*fwd, client_post(), "http://127.0.0.1:" + std::to_string(port) + "/mcp");
  auto outcome = settle(future);
  CHECK_FALSE(outcome.response);
  REQUIRE(outcome.unreachable);
  CHECK(outcome.unreachable->find("cannot connect") != std::string::npos);
  CHECK(outcome.unreachable->find(std::to_string(port)) != std::string::npos);
  CHECK(fwd->unreachable() == 1);
}

TEST_CASE("forwarder: an advertised address that is not an http:// URL is a 502 naming it") {
  auto fwd = forwarder();
  for (std::string address : {"https://127.0.0.1:1/mcp", "not a url", ""}) {
    auto future = forward(*fwd, client_post(), address);
    auto outcome = settle(future);
    REQUIRE(outcome.response);
    CHECK(outcome.response->status == 502);
    CHECK(outcome.response->body.find("is not an http:// URL") != std::string::npos);
  }
}

TEST_CASE("forwarder: a node that hangs up before its answer is a 502") {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  auto port = acceptor.local_endpoint().port();
  std::thread hang_up([&] {
    boost::asio::ip::tcp::socket socket(ioc);
    acceptor.accept(socket);
    char some[16];
    boost::system::error_code ignored;
    boost::asio::read(socket, boost::asio::buffer(some), ignored);
    socket.close();
  });
  auto fwd = forwarder();
  auto future = forward(*fwd, client_post(), "http://127.0.0.1:" + std::to_string(port) + "/mcp");
  auto outcome = settle(future);
  hang_up.join();
  REQUIRE(outcome.response);
  CHECK(outcome.response->status == 502);
  CHECK(outcome.response->headers.size() >= 2);
  CHECK(outcome.response->body.find("failed: ") != std::string::npos);
}

TEST_CASE("forwarder: bad options are refused") {
  NodeForwarder::Options options;
  CHECK_FALSE(NodeForwarder::start(options).ok());
  options.node_id = "n1";
  options.io_threads = 0;
  CHECK_FALSE(NodeForwarder::start(options).ok());
}
