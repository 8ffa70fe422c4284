// The one translation unit of `dorm bench http` (see bare_http_server.hpp): Boost.Beast,
// one io_context run by the I/O threads, each connection a coroutine on its own strand,
// as dorm serve's HttpServer runs its connections on strands of one io_context.
#include "bare_http_server.hpp"

#include <rapidjson/document.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <thread>
#include <variant>
#include <vector>

#include "dorm/mcp/event_id.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/listen_address.hpp"
#include "dorm/mcp/tool.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// dorm serve's defaults: the priming event's retry hint and the idle connection timeout.
constexpr int kRetryMs = 500;
constexpr auto kIdleTimeout = std::chrono::seconds(60);
// What dorm serve answers an initialize with the `testing` fixtures, under another name.
constexpr std::string_view kInitializeResult =
    R"({"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false},"logging":{}},)"
    R"("serverInfo":{"name":"dorm-bench-http","version":"1"}})";

// Stream ids and session ids only need to differ; the canned answers need no randomness.
std::atomic<std::uint64_t> next_id{1};

http::response<http::string_body> reply(unsigned version, http::status status,
                                        std::string_view content_type, std::string body) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "dorm");
  if (!content_type.empty()) res.set(http::field::content_type, content_type);
  if (content_type == "text/event-stream") res.set(http::field::cache_control, "no-cache");
  res.keep_alive(true);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

std::string sse_event(std::uint64_t stream, std::uint64_t seq, std::string_view data) {
  std::string out = "id: " + mcp::EventId{stream, seq}.to_string() + "\nevent: message\ndata: ";
  out += data;
  out += "\n\n";
  return out;
}

// The echo tool's result for `params` ({"name":"echo","arguments":{"text":...}}).
std::optional<std::string> echo_result(const std::string& params) {
  rapidjson::Document doc;
  doc.Parse(params.data(), params.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("arguments")) return std::nullopt;
  const auto& args = doc["arguments"];
  if (!args.IsObject() || !args.HasMember("text") || !args["text"].IsString()) return std::nullopt;
  return mcp::ToolResult::text({args["text"].GetString(), args["text"].GetStringLength()}).json;
}

// The canned answer to one request of the benchmark's client.
http::response<http::string_body> answer(const http::request<http::string_body>& req) {
  auto bad = [&](std::string_view why) {
    return reply(req.version(), http::status::bad_request, "application/json",
                 mcp::error_response(std::nullopt, mcp::kInvalidRequest, why));
  };
  auto parsed = mcp::parse_body(req.body());
  auto* body = std::get_if<mcp::ParsedBody>(&parsed);
  if (!body || body->batch) return bad("one JSON-RPC message per POST");
  const auto& m = body->messages.front();
  if (m.kind != mcp::Message::Kind::request)
    return reply(req.version(), http::status::accepted, {}, {});
  std::uint64_t stream = next_id++;
  if (m.method == "initialize") {
    // As dorm serve answers it: one event without an id (no stream to resume yet).
    auto res =
        reply(req.version(), http::status::ok, "text/event-stream",
              "event: message\ndata: " + mcp::result_response(*m.id, kInitializeResult) + "\n\n");
    res.set("Mcp-Session-Id", mcp::fixed_hex(stream, 16) + mcp::fixed_hex(~stream, 16));
    return res;
  }
  if (m.method != "tools/call")
    return bad("this server answers initialize and tools/call echo only");
  auto result = echo_result(m.params);
  if (!result)
    return bad("tools/call: params must be {\"name\":\"echo\",\"arguments\":{\"text\":...}}");
  std::string priming = "id: " + mcp::EventId{stream, 0}.to_string() +
                        "\nretry: " + std::to_string(kRetryMs) + "\ndata: \n\n";
  return reply(req.version(), http::status::ok, "text/event-stream",
               priming + sse_event(stream, 1, mcp::result_response(*m.id, *result)));
}

asio::awaitable<void> serve_connection(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    stream.expires_after(kIdleTimeout);
    auto [rec, read] = co_await http::async_read(stream, buffer, req, kTuple);
    (void)read;
    if (rec) break;
    http::response<http::string_body> res;
    try {
      res = answer(req);
    } catch (const std::exception& e) {  // a bug here: say so instead of dropping the connection
      res = reply(req.version(), http::status::internal_server_error, "text/plain", e.what());
    }
    res.keep_alive(req.keep_alive());
    stream.expires_never();
    auto [wec, written] = co_await http::async_write(stream, res, kTuple);
    (void)written;
    if (wec || !res.keep_alive()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> accept_loop(asio::io_context& ioc, tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(ioc), kTuple);
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) continue;  // a connection that failed before it was accepted (EMFILE, reset)
    auto executor = socket.get_executor();
    asio::co_spawn(executor, serve_connection(std::move(socket)), asio::detached);
  }
}

Result<tcp::endpoint> bind(tcp::acceptor& acceptor, const mcp::ListenAddress& at) {
  beast::error_code ec;
  auto address = asio::ip::make_address(at.host == "localhost" ? "127.0.0.1" : at.host, ec);
  if (ec)
    return Error{ErrorCode::invalid_argument, "--listen " + at.to_string() + ": " + ec.message()};
  tcp::endpoint endpoint(address, at.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Error{ErrorCode::io_error, "cannot listen on " + at.to_string() + ": " + ec.message()};
  return acceptor.local_endpoint();
}

}  // namespace

int run_bare_http_server(const BareHttpOptions& options) {
  auto fail = [](const std::string& what) {
    log::error("bench_http_failed", {{"error", what}});
    return 1;
  };
  auto listen = mcp::parse_listen_address(options.listen);
  if (!listen) return fail(listen.error().message);
  if (!mcp::is_loopback_host(listen->host)) {
    return fail("--listen " + listen->to_string() +
                ": a benchmark server listens on loopback only");
  }
  asio::io_context ioc;
  tcp::acceptor acceptor(asio::make_strand(ioc));
  auto bound = bind(acceptor, *listen);
  if (!bound) return fail(bound.error().message);

  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const beast::error_code&, int) { ioc.stop(); });
  asio::co_spawn(acceptor.get_executor(), accept_loop(ioc, acceptor), asio::detached);
  mcp::ListenAddress local{bound->address().to_string(), bound->port()};
  std::printf("listening on http://%s/mcp\n", local.to_string().c_str());
  std::fflush(stdout);

  std::vector<std::thread> threads;
  for (int i = 1; i < options.http_threads; ++i) threads.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace dorm::bench
