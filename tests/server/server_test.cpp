// dorm::server::Server in this process: a tool of the test's own served over real HTTP on
// a storage scheme the test registers, on a backend the test hands over, and the ways
// run() ends. The MCP exchanges use a synchronous Boost.Beast client; every wait is
// bounded (a socket receive timeout, a future's wait_for).
#include "dorm/server/server.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <string>

#include "dorm/runtime/keys.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/open.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace dorm;
using server::Server;
using server::ServerOptions;

namespace {

constexpr auto kBound = std::chrono::seconds(60);  // any one wait, ASan included

// Runs server.run() on a thread of its own. At scope exit, if run() is still going (a
// failed REQUIRE), it is stopped as a second stop would, and waited for.
class Runner {
 public:
  explicit Runner(Server& server)
      : server_(server),
        status_(std::async(std::launch::async, [&server] { return server.run(); })) {}
  ~Runner() {
    if (!status_.valid()) return;
    server_.stop();
    server_.stop();
    status_.wait();
  }
  // run()'s exit status, if it returned within kBound.
  std::optional<int> status() {
    if (status_.wait_for(kBound) != std::future_status::ready) return std::nullopt;
    return status_.get();
  }

 private:
  Server& server_;
  std::future<int> status_;
};

// on_ready's URL, delivered to the test thread.
struct Ready {
  std::promise<std::string> url;
  std::future<std::string> future = url.get_future();
  // The port of the URL on_ready gave, if it came within kBound.
  std::optional<std::uint16_t> port() {
    if (future.wait_for(kBound) != std::future_status::ready) return std::nullopt;
    auto url_text = future.get();
    auto colon = url_text.rfind(':');
    REQUIRE(url_text.starts_with("http://127.0.0.1:"));
    REQUIRE(url_text.ends_with("/mcp"));
    return static_cast<std::uint16_t>(std::stoi(url_text.substr(colon + 1)));
  }
};

ServerOptions test_options(Ready& ready) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.handle_signals = false;
  options.http_threads = 1;
  options.name = "server-test";
  options.version = "9.9.9";
  options.on_ready = [&ready](const std::string& url) { ready.url.set_value(url); };
  return options;
}

// A tool of the test's own: counts its calls in the session's durable storage.
void add_tally(Server& server) {
  mcp::ToolSpec tally;
  tally.name = "tally";
  tally.description = "Counts its calls in this session.";
  tally.handler = [](std::shared_ptr<mcp::ToolContext> call) {
    auto stored = call->storage().get("tally").value_or_throw();
    auto next = std::to_string(stored ? std::stoll(*stored) + 1 : 1);
    call->storage().put("tally", next).value_or_throw();
    call->finish(mcp::ToolResult::text(next));
  };
  REQUIRE(server.tools().add(std::move(tally)).ok());
}

// An MCP client over one connection, one request at a time.
class Client {
 public:
  explicit Client(std::uint16_t port) : port_(port), socket_(ioc_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    timeval tv{static_cast<time_t>(kBound.count()), 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  http::response<http::string_body> post(const std::string& body) {
    http::request<http::string_body> req{http::verb::post, "/mcp", 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    req.set(http::field::accept, "application/json, text/event-stream");
    req.set(http::field::content_type, "application/json");
    if (!session_.empty()) {
      req.set("Mcp-Session-Id", session_);
      req.set("MCP-Protocol-Version", "2025-11-25");
    }
    req.body() = body;
    req.prepare_payload();
    http::write(socket_, req);
    http::response<http::string_body> res;
    http::read(socket_, buffer_, res);
    return res;
  }

  // initialize and notifications/initialized; returns initialize's result.
  std::string initialize() {
    auto res = post(
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"server-test","version":"1"}}})");
    REQUIRE(res.result_int() == 200);
    session_ = std::string(res["mcp-session-id"]);
    REQUIRE(!session_.empty());
    REQUIRE(post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").result_int() == 202);
    return result_of(res.body(), 1);
  }

  // The text of tools/call `name`'s result.
  std::string call(const std::string& name, int id) {
    auto res =
        post(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
             R"(,"method":"tools/call","params":{"name":")" + name + R"(","arguments":{}}})");
    REQUIRE(res.result_int() == 200);
    rapidjson::Document result;
    result.Parse(result_of(res.body(), id).c_str());
    REQUIRE(result.IsObject());
    REQUIRE(result.HasMember("content"));
    CHECK_FALSE(result["isError"].GetBool());
    return result["content"][0]["text"].GetString();
  }

  const std::string& session() const { return session_; }
  void use_session(std::string id) { session_ = std::move(id); }

 private:
  // The result of response `id` among the SSE events of `body`, as JSON text.
  static std::string result_of(const std::string& body, int id) {
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
      auto end = body.find('\n', at);
      auto data = body.substr(at + 6, end - at - 6);
      at = end;
      rapidjson::Document message;
      message.Parse(data.c_str());
      if (message.HasParseError() || !message.IsObject() || !message.HasMember("id")) continue;
      if (!message["id"].IsInt() || message["id"].GetInt() != id) continue;
      REQUIRE_MESSAGE(message.HasMember("result"), data);
      rapidjson::StringBuffer out;
      rapidjson::Writer<rapidjson::StringBuffer> writer(out);
      message["result"].Accept(writer);
      return out.GetString();
    }
    FAIL("no response with id " << id << " in: " << body);
    return {};
  }

  std::uint16_t port_;
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  std::string session_;
};

// A scheme's store: a memory store the test keeps across server runs (as a disk would),
// counting the commits that go through this handle and saying when it is closed.
struct SchemeStore {
  storage::MemoryBackend data;
  std::atomic<int> opened{0};
  std::atomic<int> commits{0};
  std::atomic<int> closed{0};
};

class CountingBackend final : public storage::BackendWrapper {
 public:
  explicit CountingBackend(SchemeStore& store) : BackendWrapper(store.data), store_(store) {
    ++store_.opened;
  }
  ~CountingBackend() override { ++store_.closed; }
  Result<void> commit(const storage::WriteBatch& batch) override {
    ++store_.commits;
    return BackendWrapper::commit(batch);
  }
  std::string describe() const override { return "counted:"; }

 private:
  SchemeStore& store_;
};

}  // namespace

TEST_CASE("server: a tool of its own, served on a registered storage scheme, across two runs") {
  static SchemeStore store;  // outlives the registry entry, which lasts for the process
  REQUIRE(storage::register_storage_scheme(
              "counted",
              [](const storage::StorageUri& uri,
                 storage::OpenMode) -> Result<std::unique_ptr<storage::Backend>> {
                if (!uri.path.empty())
                  return Error{ErrorCode::invalid_argument, "counted: takes no path"};
                return std::unique_ptr<storage::Backend>(std::make_unique<CountingBackend>(store));
              })
              .ok());

  std::string session;
  {
    Ready ready;
    auto options = test_options(ready);
    options.storage = "counted:";
    Server server(options);
    add_tally(server);
    Runner runner(server);
    auto port = ready.port();
    REQUIRE(port);
    Client client(*port);
    rapidjson::Document init;
    init.Parse(client.initialize().c_str());
    CHECK(std::string(init["serverInfo"]["name"].GetString()) == "server-test");
    CHECK(std::string(init["serverInfo"]["version"].GetString()) == "9.9.9");
    CHECK(client.call("tally", 2) == "1");
    CHECK(client.call("tally", 3) == "2");
    session = client.session();
    // The session's turns committed through the scheme's backend.
    CHECK(store.opened.load() == 1);
    CHECK(store.commits.load() > 0);
    server.stop();
    CHECK(runner.status() == std::optional<int>(0));
  }
  CHECK(store.closed.load() == 1);
  CHECK(store.data.get(keys::meta(keys::kMetaCleanShutdown)).value().has_value());

  // A second server on the same URI: the same session goes on counting.
  Ready ready;
  auto options = test_options(ready);
  options.storage = "counted:";
  Server server(options);
  add_tally(server);
  Runner runner(server);
  auto port = ready.port();
  REQUIRE(port);
  Client client(*port);
  client.use_session(session);
  CHECK(client.call("tally", 4) == "3");
  CHECK(store.opened.load() == 2);
  server.stop();
  CHECK(runner.status() == std::optional<int>(0));
  CHECK(store.data.get(keys::meta(keys::kMetaGeneration)).value() ==
        std::optional<std::string>("2"));
}

TEST_CASE("server: use_storage serves the caller's backend, which it leaves open") {
  storage::MemoryBackend store;
  Ready ready;
  auto options = test_options(ready);
  options.storage = "nosuchscheme:";  // never opened: the caller's backend is served
  Server server(options);
  add_tally(server);
  server.use_storage(store);
  Runner runner(server);
  auto port = ready.port();
  REQUIRE(port);
  Client client(*port);
  client.initialize();
  CHECK(client.call("tally", 2) == "1");
  server.stop();
  CHECK(runner.status() == std::optional<int>(0));
  // Written through to the caller's store, which stays usable: the clean-shutdown marker.
  CHECK(store.get(keys::meta(keys::kMetaCleanShutdown)).value() == std::optional<std::string>("1"));
}

TEST_CASE("server: stop() before run() starts and stops at once, never ready") {
  Ready ready;
  auto options = test_options(ready);
  options.storage = "memory:";
  Server server(options);
  server.stop();
  Runner runner(server);
  CHECK(runner.status() == std::optional<int>(0));
  CHECK(ready.future.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  // run() once only; stop() after run() does nothing.
  CHECK(server.run() == 1);
  server.stop();
}

TEST_CASE("server: start-up failures return 1 without serving") {
  auto fails = [](ServerOptions options) {
    options.handle_signals = false;
    bool became_ready = false;
    options.on_ready = [&became_ready](const std::string&) { became_ready = true; };
    Server server(options);
    int status = server.run();
    CHECK_FALSE(became_ready);
    return status;
  };
  ServerOptions unknown_scheme;
  unknown_scheme.listen = "127.0.0.1:0";
  unknown_scheme.storage = "nosuchscheme:x";
  CHECK(fails(unknown_scheme) == 1);
  ServerOptions bad_listen;
  bad_listen.listen = "not an address";
  bad_listen.storage = "memory:";
  CHECK(fails(bad_listen) == 1);
  ServerOptions bad_fixture;
  bad_fixture.listen = "127.0.0.1:0";
  bad_fixture.storage = "memory:";
  bad_fixture.fixtures = {"nosuchset"};
  CHECK(fails(bad_fixture) == 1);
  ServerOptions no_worker;
  no_worker.listen = "127.0.0.1:0";
  no_worker.storage = "memory:";
  no_worker.code_mode = true;
  no_worker.engine_worker = "/nonexistent/dorm-engine-worker";
  CHECK(fails(no_worker) == 1);
}

TEST_CASE("server: destroying a Server stops the run() going on another thread") {
  Ready ready;
  auto options = test_options(ready);
  options.storage = "memory:";
  auto server = std::make_unique<Server>(options);
  auto status = std::async(std::launch::async, [&server] { return server->run(); });
  REQUIRE(ready.port());
  server.reset();  // stops it, and returns once run() is done with the Server
  REQUIRE(status.wait_for(kBound) == std::future_status::ready);
  CHECK(status.get() == 0);
}
