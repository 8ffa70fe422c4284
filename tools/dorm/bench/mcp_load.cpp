// The one translation unit of `dorm bench mcp`'s client that compiles Boost.Beast (see
// mcp_load.hpp for what the load is).
#include "mcp_load.hpp"

#include <rapidjson/document.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>

#include "dorm/testing/sse_decoder.hpp"
#include "notifier.hpp"
#include "version.hpp"

namespace dorm::bench::mcp_load {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using deploy_sim::Notifier;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// The newest revision: dorm answers it with a priming event before each result.
constexpr std::string_view kProtocolVersion = "2025-11-25";
// How long stragglers get once the span is over and their sockets are closed.
constexpr auto kCloseGrace = std::chrono::seconds(5);
constexpr std::size_t kQuoted = 300;  // bytes of a bad answer quoted in its failure

// What every connection of one run shares (one thread: no locks).
struct Run {
  Run(asio::any_io_executor executor, LoadOptions o) : options(std::move(o)), changed(executor) {}

  void fail(std::string what) {
    if (result.failures++ == 0) result.first_failure = std::move(what);
  }
  void record(Clock::time_point sent, Clock::time_point done) {
    if (finished || done < start || done >= end) return;
    result.latencies_ms.push_back(std::chrono::duration<double, std::milli>(done - sent).count());
    auto window = static_cast<std::size_t>((done - start) / options.window);
    if (window < result.window_calls.size()) ++result.window_calls[window];
  }

  LoadOptions options;
  Clock::time_point start = Clock::time_point::max();  // the measured span, set once
  Clock::time_point end = Clock::time_point::max();    // every session is open
  LoadResult result;
  Notifier changed;
  int busy = 0;           // connections opening or calling
  bool finished = false;  // run_load returned: stragglers record nothing
};

std::string quoted(std::string_view text) {
  return std::string(text.substr(0, kQuoted)) + (text.size() > kQuoted ? "..." : "");
}

// The JSON-RPC response to request `id` in a response body: the body itself when it is
// JSON, else the first SSE event whose data is that response. Empty on success.
std::string find_response(const http::response<http::string_body>& res, std::int64_t id,
                          rapidjson::Document& message) {
  auto matches = [&](std::string_view json) {
    message.Parse(json.data(), json.size());
    return !message.HasParseError() && message.IsObject() && message.HasMember("id") &&
           message["id"].IsInt64() && message["id"].GetInt64() == id;
  };
  std::string_view type = res[http::field::content_type];
  if (type.starts_with("text/event-stream")) {
    testing::SseDecoder decoder;
    for (const auto& event : decoder.feed(res.body()).events) {
      if (!event.data.empty() && matches(event.data)) return {};
    }
  } else if (type.starts_with("application/json") && matches(res.body())) {
    return {};
  }
  return "no JSON-RPC response with id " + std::to_string(id) + " in the " +
         std::to_string(res.result_int()) + " answer (" + std::string(type) +
         "): " + quoted(res.body());
}

// One connection and the MCP session it carries.
class Session {
 public:
  Session(asio::any_io_executor executor, const LoadOptions& options, int index)
      : stream_(std::move(executor)), options_(options), index_(index) {}

  // Connects, initializes and sends notifications/initialized. Empty on success.
  asio::awaitable<std::string> open() {
    if (auto e = co_await connect(); !e.empty()) co_return e;
    std::string body = R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{)"
                       R"("protocolVersion":")" +
                       std::string(kProtocolVersion) +
                       R"(","capabilities":{},"clientInfo":{"name":"dorm-bench-mcp","version":")" +
                       std::string(kVersion) + R"("}}})";
    http::response<http::string_body> res;
    if (auto e = co_await exchange(std::move(body), 200, res); !e.empty())
      co_return "initialize: " + e;
    rapidjson::Document message;
    if (auto e = find_response(res, 0, message); !e.empty()) co_return "initialize: " + e;
    const auto* result = message.HasMember("result") ? &message["result"] : nullptr;
    if (!result || !result->IsObject() || !result->HasMember("protocolVersion") ||
        !(*result)["protocolVersion"].IsString()) {
      co_return "initialize: no protocolVersion in " + quoted(res.body());
    }
    version_ = (*result)["protocolVersion"].GetString();
    session_id_ = std::string(res["Mcp-Session-Id"]);
    if (session_id_.empty()) co_return "initialize: no Mcp-Session-Id header";
    res = {};
    auto e =
        co_await exchange(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", 202, res);
    if (!e.empty()) co_return "notifications/initialized: " + e;
    open_ = true;
    co_return std::string();
  }

  bool is_open() const { return open_; }

  // A new connection (after close()) for the same session. Empty on success.
  asio::awaitable<std::string> connect() {
    buffer_.clear();
    stream_.expires_after(options_.timeout);
    asio::ip::tcp::endpoint to(asio::ip::make_address(options_.host), options_.port);
    auto [ec] = co_await stream_.async_connect(to, kTuple);
    if (ec) co_return "connect: " + ec.message();
    co_return std::string();
  }

  // tools/call echo as request `id`. Empty on success.
  asio::awaitable<std::string> call(std::int64_t id) {
    std::string text = "c" + std::to_string(index_) + "-" + std::to_string(id);
    std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                       R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" +
                       text + R"("}}})";
    http::response<http::string_body> res;
    if (auto e = co_await exchange(std::move(body), 200, res); !e.empty()) co_return e;
    rapidjson::Document message;
    if (auto e = find_response(res, id, message); !e.empty()) co_return e;
    if (!echoed(message, text))
      co_return "the result does not echo \"" + text + "\": " + quoted(res.body());
    co_return std::string();
  }

  using StreamParser = http::response_parser<http::buffer_body>;

  // Sends the standalone GET on this session's connection and reads the response head,
  // which must be 200 with an event stream. Empty on success.
  asio::awaitable<std::string> get_stream(StreamParser& parser) {
    http::request<http::empty_body> req{http::verb::get, "/mcp", 11};
    req.set(http::field::host, options_.host + ":" + std::to_string(options_.port));
    req.set(http::field::accept, "text/event-stream");
    req.set("Mcp-Session-Id", session_id_);
    req.set("MCP-Protocol-Version", version_);
    req.keep_alive(true);
    stream_.expires_after(options_.timeout);
    auto [wec, written] = co_await http::async_write(stream_, req, kTuple);
    (void)written;
    if (wec) co_return "send: " + wec.message();
    parser.body_limit(boost::none);
    auto [rec, read] = co_await http::async_read_header(stream_, buffer_, parser, kTuple);
    (void)read;
    if (rec) co_return "response head: " + rec.message();
    const auto& res = parser.get();
    if (res.result_int() != 200) co_return "status " + std::to_string(res.result_int()) + ", expected 200";
    if (!res[http::field::content_type].starts_with("text/event-stream"))
      co_return "not an event stream: " + std::string(res[http::field::content_type]);
    co_return std::string();
  }

  // Reads the stream's body until it ends or the connection closes, adding the bytes of
  // each read to `received`; nothing is kept. No timeout: a held stream is idle by design.
  asio::awaitable<void> read_stream(StreamParser& parser, std::int64_t& received) {
    stream_.expires_never();
    char scratch[512];
    while (!parser.is_done()) {
      parser.get().body().data = scratch;
      parser.get().body().size = sizeof scratch;
      // read_some: back with whatever arrived (a keep-alive is 13 bytes), not once the
      // scratch is full.
      auto [ec, n] = co_await http::async_read_some(stream_, buffer_, parser, kTuple);
      (void)n;
      received += static_cast<std::int64_t>(sizeof scratch - parser.get().body().size);
      if (ec && ec != http::error::need_buffer) break;
    }
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  static bool echoed(const rapidjson::Document& m, const std::string& text) {
    if (!m.HasMember("result") || !m["result"].IsObject()) return false;
    const auto& result = m["result"];
    if (!result.HasMember("content") || !result["content"].IsArray() || result["content"].Empty())
      return false;
    const auto& first = result["content"][0];
    return first.IsObject() && first.HasMember("text") && first["text"].IsString() &&
           text == first["text"].GetString();
  }

  // POSTs `body` and reads the whole answer, which must have status `expect`.
  asio::awaitable<std::string> exchange(std::string body, unsigned expect,
                                        http::response<http::string_body>& res) {
    http::request<http::string_body> req{http::verb::post, "/mcp", 11};
    req.set(http::field::host, options_.host + ":" + std::to_string(options_.port));
    req.set(http::field::accept, "application/json, text/event-stream");
    req.set(http::field::content_type, "application/json");
    if (!session_id_.empty()) {
      req.set("Mcp-Session-Id", session_id_);
      req.set("MCP-Protocol-Version", version_);
    }
    req.keep_alive(true);
    req.body() = std::move(body);
    req.prepare_payload();
    stream_.expires_after(options_.timeout);
    auto [wec, written] = co_await http::async_write(stream_, req, kTuple);
    (void)written;
    if (wec) co_return "send: " + wec.message();
    auto [rec, read] = co_await http::async_read(stream_, buffer_, res, kTuple);
    (void)read;
    if (rec) co_return "response: " + rec.message();
    if (res.result_int() != expect) {
      co_return "status " + std::to_string(res.result_int()) + ", expected " +
          std::to_string(expect) + ": " + quoted(res.body());
    }
    if (!res.keep_alive()) co_return "the server closed the connection (Connection: close)";
    co_return std::string();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  const LoadOptions& options_;
  int index_;
  std::string session_id_;
  std::string version_;
  bool open_ = false;  // initialized: calls may follow
};

using Sessions = std::vector<std::shared_ptr<Session>>;

asio::awaitable<void> open_one(std::shared_ptr<Run> run, std::shared_ptr<Session> s) {
  auto error = co_await s->open();
  if (!error.empty()) {
    run->fail("session " + error);
    s->close();
  }
  --run->busy;
  run->changed.notify();
}

// Calls back to back until the span ends or a call fails.
asio::awaitable<void> drive(std::shared_ptr<Run> run, std::shared_ptr<Session> s) {
  for (std::int64_t id = 1; Clock::now() < run->end; ++id) {
    auto sent = Clock::now();
    auto error = co_await s->call(id);
    if (!error.empty()) {
      if (!run->finished) run->fail("tools/call: " + error);
      break;
    }
    run->record(sent, Clock::now());
  }
  s->close();
  --run->busy;
  run->changed.notify();
}

// Waits until no connection is busy; past `deadline` closes them all and waits a little
// more (their operations then end at once).
asio::awaitable<void> settle(Run& run, const Sessions& sessions, Clock::time_point deadline) {
  if (co_await run.changed.until([&] { return run.busy == 0; }, deadline)) co_return;
  for (const auto& s : sessions) s->close();
  co_await run.changed.until([&] { return run.busy == 0; }, Clock::now() + kCloseGrace);
}

}  // namespace

// ---- held streams ----

struct HeldStreams::Impl {
  Impl(asio::any_io_executor executor, HoldOptions o) : hold(std::move(o)), changed(executor) {
    load.host = hold.host;
    load.port = hold.port;
    load.timeout = hold.timeout;
  }
  void fail(std::string what) {
    if (failures++ == 0) first_failure = std::move(what);
  }

  HoldOptions hold;
  LoadOptions load;  // what a Session reads: host, port, timeout
  Notifier changed;
  Sessions sessions;  // the open ones, once open_sessions has returned
  // Bytes each stream received, and the count at the last mark; sized once, never moved.
  std::vector<std::int64_t> received, marked;
  int busy = 0;     // sessions opening, or GETs waiting for their heads
  int readers = 0;  // streams being read
  std::int64_t failures = 0;
  std::string first_failure;
};

namespace {

using Impl = HeldStreams::Impl;

// Opens the session over a connection of its own and closes that connection: a held
// stream then comes on a connection of its own, as a client's GET does, and what the
// server spends on that connection counts as the stream's. Only `parallel` of these
// connections are open at once, so little of what they freed is left for the streams'
// connections to reuse.
asio::awaitable<void> open_held(std::shared_ptr<Impl> impl, std::shared_ptr<Session> s) {
  if (auto error = co_await s->open(); !error.empty()) impl->fail("session " + error);
  s->close();
  --impl->busy;
  impl->changed.notify();
}

asio::awaitable<void> hold_one(std::shared_ptr<Impl> impl, std::shared_ptr<Session> s,
                               std::size_t index) {
  Session::StreamParser parser;
  auto error = co_await s->connect();
  if (error.empty()) error = co_await s->get_stream(parser);
  --impl->busy;
  if (!error.empty()) {
    impl->fail("GET stream: " + error);
    s->close();
    impl->changed.notify();
    co_return;
  }
  ++impl->readers;
  impl->changed.notify();
  co_await s->read_stream(parser, impl->received[index]);
  --impl->readers;
  impl->changed.notify();
}

// Runs `start(i)` for every i below `count`, at most `parallel` at a time, until all are
// done (`busy` back to 0); past `deadline` the connections are closed.
template <class Start>
asio::awaitable<void> in_waves(Impl& impl, std::size_t count, Start start, Clock::time_point deadline) {
  for (std::size_t i = 0; i < count; ++i) {
    co_await impl.changed.until([&] { return impl.busy < impl.hold.parallel; }, deadline);
    ++impl.busy;
    start(i);
  }
  if (!co_await impl.changed.until([&] { return impl.busy == 0; }, deadline)) {
    for (const auto& s : impl.sessions) s->close();
    co_await impl.changed.until([&] { return impl.busy == 0; }, Clock::now() + kCloseGrace);
  }
}

}  // namespace

asio::awaitable<std::unique_ptr<HeldStreams>> HeldStreams::open_sessions(HoldOptions options) {
  auto executor = co_await asio::this_coro::executor;
  auto impl = std::make_shared<Impl>(executor, std::move(options));
  Sessions all;
  for (int i = 0; i < impl->hold.sessions; ++i) {
    all.push_back(std::make_shared<Session>(executor, impl->load, i));
  }
  // A generous bound for the whole: each wave's exchanges are bounded themselves.
  auto deadline = Clock::now() + impl->hold.timeout * (1 + all.size() / impl->hold.parallel);
  impl->sessions = all;
  co_await in_waves(*impl, all.size(),
                    [&](std::size_t i) { asio::co_spawn(executor, open_held(impl, all[i]), asio::detached); },
                    deadline);
  impl->sessions.clear();
  for (const auto& s : all) {
    if (s->is_open()) impl->sessions.push_back(s);
  }
  impl->received.assign(impl->sessions.size(), 0);
  impl->marked.assign(impl->sessions.size(), 0);
  co_return std::unique_ptr<HeldStreams>(new HeldStreams(std::move(impl)));
}

HeldStreams::~HeldStreams() {
  for (const auto& s : impl_->sessions) s->close();
}

asio::awaitable<void> HeldStreams::open_streams() {
  auto executor = co_await asio::this_coro::executor;
  auto impl = impl_;
  auto deadline = Clock::now() + impl->hold.timeout * (1 + impl->sessions.size() / impl->hold.parallel);
  co_await in_waves(*impl, impl->sessions.size(),
                    [&](std::size_t i) {
                      asio::co_spawn(executor, hold_one(impl, impl->sessions[i], i), asio::detached);
                    },
                    deadline);
}

asio::awaitable<void> HeldStreams::close() {
  auto impl = impl_;
  for (const auto& s : impl->sessions) s->close();
  co_await impl->changed.until([&] { return impl->readers == 0 && impl->busy == 0; },
                               Clock::now() + kCloseGrace);
}

int HeldStreams::sessions_open() const { return static_cast<int>(impl_->sessions.size()); }
int HeldStreams::streams_open() const { return impl_->readers; }
std::int64_t HeldStreams::failures() const { return impl_->failures; }
const std::string& HeldStreams::first_failure() const { return impl_->first_failure; }

int HeldStreams::streams_with_bytes() const {
  int n = 0;
  for (std::size_t i = 0; i < impl_->received.size(); ++i) n += impl_->received[i] > impl_->marked[i];
  return n;
}

void HeldStreams::mark_received() { impl_->marked = impl_->received; }

asio::awaitable<LoadResult> run_load(LoadOptions options) {
  auto executor = co_await asio::this_coro::executor;
  auto run = std::make_shared<Run>(executor, std::move(options));
  const auto& o = run->options;

  Sessions all;
  for (int i = 0; i < o.connections; ++i) {
    all.push_back(std::make_shared<Session>(executor, run->options, i));
    ++run->busy;
    asio::co_spawn(executor, open_one(run, all.back()), asio::detached);
  }
  co_await settle(*run, all, Clock::now() + o.timeout + kCloseGrace);

  Sessions ready;
  for (const auto& s : all) {
    if (s->is_open()) ready.push_back(s);
  }
  run->start = Clock::now() + o.warmup;
  run->end = run->start + o.measure;
  run->result.window_calls.assign(static_cast<std::size_t>(o.measure / o.window), 0);
  for (const auto& s : ready) {
    ++run->busy;
    asio::co_spawn(executor, drive(run, s), asio::detached);
  }
  co_await deploy_sim::sleep_until(run->start);
  if (o.span_started) o.span_started();
  for (std::size_t w = 1; w <= run->result.window_calls.size(); ++w) {
    co_await deploy_sim::sleep_until(run->start + w * o.window);
    if (o.window_ended) o.window_ended();
  }
  co_await deploy_sim::sleep_until(run->end);
  if (o.span_ended) o.span_ended();
  co_await settle(*run, ready, run->end + o.timeout);

  run->finished = true;
  run->result.seconds = std::chrono::duration<double>(o.measure).count();
  co_return std::move(run->result);
}

}  // namespace dorm::bench::mcp_load
