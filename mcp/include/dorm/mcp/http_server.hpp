// HttpServer — the HTTP front of `dorm serve`, on Boost.Beast.
//
// Asynchronous end to end: a few I/O threads run every connection; no handler blocks on
// anything but its socket, and the application handler answers through a callback that
// may run on any thread later. The server binds before storage is opened, so `/healthz`
// answers 200 as soon as the socket is bound while `/readyz` answers 503 until
// set_ready(true). A request's header is read before its body: an endpoint request can be
// refused from its header (Options::check_head), and a Content-Length over the limit is,
// before any of the body is read or parsed. Beast and Asio stay inside http_server.cpp
// (they cost ~24 s per translation unit); this header exposes none of their types.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dorm/mcp/listen_address.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// One request to the application endpoint, as the handler sees it: no Beast types.
struct HttpRequest {
  // A header field. HTTP names are case-insensitive, so `name` is lower-cased.
  struct Field {
    std::string name;
    // A field sent on several lines holds their values joined with ", " in arrival order,
    // as RFC 9110 §5.3 lets a recipient combine them (for a list like Accept, the same
    // list); `lines` counts them, so a caller can refuse a single-valued field sent twice.
    std::string value;
    int lines = 1;
  };

  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, as sent
  std::vector<Field> headers;  // one per name, in order of first arrival
  std::string body;
  // Who sent it, for a local route (Options::local_routes; empty elsewhere): the peer's
  // IP address as text, and whether it is a loopback address (127.0.0.0/8, ::1, or
  // either as an IPv4-mapped IPv6 address).
  std::string peer;
  bool peer_loopback = false;

  // The value of header `name` (lower-case), all its lines joined, if present.
  std::optional<std::string_view> header(std::string_view name) const;
  // How many header lines carried `name` (lower-case); 0 when absent.
  int header_lines(std::string_view name) const;
};

// A response body sent while it is being written (an SSE stream), shared between the
// application, which writes, and the connection, which sends. Thread-safe: the writer
// and the connection's I/O thread may call it concurrently.
//
// The writer sees how much it has queued that has not reached the socket yet (unsent()),
// so a slow reader can be detected and cut off instead of buffering without bound. A
// body is closed once: when its end has been sent, when the writer aborts it, or when the
// connection fails or the client goes away; closed callbacks then run (on whichever
// thread closed it) and later writes are dropped.
class StreamBody {
 public:
  // ---- writer side ----
  // Queues `bytes`. Returns the bytes queued and not yet written to the socket, these
  // included; 0 once closed (the bytes are dropped).
  std::size_t write(std::string_view bytes);
  // The body is complete: what is queued is sent, then the response ends cleanly (the
  // connection may carry another request).
  void end();
  // Closes the connection now, without sending what is still queued.
  void abort();
  std::size_t unsent() const;
  bool closed() const;
  // Runs `fn` once when the body closes (at once if it is closed already).
  void on_closed(std::function<void()> fn);

  // ---- connection side ----
  // `wake` is called (from any thread) whenever there is something new to take.
  void attach(std::function<void()> wake);
  struct Pending {
    std::string bytes;   // to send now (moved out; still unsent until sent())
    bool end = false;    // after these bytes the body is complete
    bool abort = false;  // close the connection instead
  };
  Pending take();
  // The writer aborted: close the connection even if a write is still pending.
  bool aborted() const;
  // `n` bytes taken earlier reached the socket.
  void sent(std::size_t n);
  // The response is over (its end was sent, or the connection is gone).
  void close();

 private:
  mutable std::mutex mutex_;
  std::string queued_;
  std::size_t in_flight_ = 0;
  bool ending_ = false;
  bool aborting_ = false;
  bool closed_ = false;
  std::function<void()> wake_;
  std::vector<std::function<void()>> on_closed_;
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::vector<std::pair<std::string, std::string>> header_fields = {},
               std::string body_text = {})
      : status(status_code), headers(std::move(header_fields)), body(std::move(body_text)) {}

  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type among them
  std::string body;
  // Set: the body is this stream instead (sent chunked as it is written); `body` is
  // ignored. The connection stays open until the stream ends or aborts.
  std::shared_ptr<StreamBody> stream;
};

// Answers one request. Call it exactly once, from any thread; it never blocks (the
// response is written by the connection's own I/O thread). Later calls do nothing.
using Respond = std::function<void(HttpResponse)>;
// Handles a request to the endpoint path. Runs on an I/O thread: it must not block. Any
// response to a HEAD request is sent without its body (a streamed one too: the stream is
// closed at once), whatever the handler puts there.
using Handler = std::function<void(HttpRequest, Respond)>;

class HttpServer {
 public:
  // Looks at a request to the endpoint path once its header is read, before any of its
  // body: a response refuses the request, nullopt lets it go on to the body limit, the
  // body and the handler. `head.body` is empty.
  using HeadCheck = std::function<std::optional<HttpResponse>(const HttpRequest& head)>;

  struct Options {
    ListenAddress listen{"127.0.0.1", 8808};
    int io_threads = 2;
    // The application endpoint; other paths are the probes, `route_prefixes`, or 404.
    std::string endpoint_path = "/mcp";
    // Paths starting with one of these go to the handler too (and through check_head),
    // like the endpoint: `dorm serve` adds "/approve/" for code mode's approval page.
    std::vector<std::string> route_prefixes;
    // Paths answered on the I/O thread by a function of their own, like the probes:
    // `dorm serve` serves GET /metrics this way. The path must match exactly (a query is
    // ignored). `answer` gets the request once its header is read — with its peer
    // (HttpRequest::peer), never its body, which is not read — and must not block; its
    // response is sent at once. Neither the handler nor check_head sees these requests.
    struct LocalRoute {
      std::string path;
      std::function<HttpResponse(const HttpRequest& head)> answer;
    };
    std::vector<LocalRoute> local_routes;
    // Run on each endpoint request before its body is read (unset: none). A refusal is
    // sent at once; the body is never parsed, and the connection closes unless the
    // request had no body. Runs on an I/O thread, also before set_handler: must not block.
    HeadCheck check_head;
    // Largest request body accepted; a larger one gets 413 and the connection closes. A
    // Content-Length over it is refused before any of the body is read, after check_head.
    std::size_t max_body_bytes = 4 * 1024 * 1024;
    // Largest request line plus header fields; more gets 431 and the connection closes.
    std::size_t max_header_bytes = 16 * 1024;
    // A kept-alive connection with no new request for this long is closed.
    std::chrono::milliseconds idle_timeout{60'000};
    // From a request's first byte, its header must be complete within this (a client
    // trickling headers cannot hold a connection open), and its body within this again.
    std::chrono::milliseconds header_timeout{10'000};
    // SO_REUSEPORT on the listening socket: a successor started with it too can bind the
    // same port while this server is still running (a rolling deploy); the kernel spreads
    // new connections over both until this one drains (see begin_drain).
    bool reuse_port = false;
    // Open connections at most (streams included). One more is accepted, answered 503
    // with Retry-After and `Connection: close`, and closed, so a flood of idle connections
    // costs bounded memory and descriptors and a client over the limit learns it at once.
    // 0: no limit (the descriptor limit still applies: see accept_failed).
    std::size_t max_connections = 10'000;
  };

  // Resolves and binds options.listen (with SO_REUSEADDR, so a restart right after a
  // killed predecessor can bind), listens, and starts the I/O threads.
  // Errors: invalid_argument if the host does not resolve; io_error if binding fails
  // (the message names the address and the OS error, e.g. "Address already in use").
  static Result<std::unique_ptr<HttpServer>> start(const Options& options);

  // stop(), then frees the connections (requests still waiting for a handler or a
  // response are dropped with theirs).
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound address; its port is the real one when 0 was asked for.
  ListenAddress local_address() const;

  // From now on requests to the endpoint path go to `handler`. Until it is set they
  // wait (the server is bound but storage is not open yet); the ones waiting are handed
  // to it now, in arrival order. Thread-safe; set it once.
  void set_handler(Handler handler);

  // From now on `/readyz` answers 200 (true) or 503 (false). Thread-safe.
  void set_ready(bool ready);

  // While `reason` is not empty, `/readyz` answers 503 with it as the body (one line),
  // even when ready: the server is up but cannot do its work (its storage is full, say).
  // An empty reason clears it. `/healthz` is not affected. Thread-safe.
  void set_unready_reason(std::string reason);

  // Closes the listening socket so a successor can bind the port; connections already
  // accepted, or queued by the kernel and not yet accepted (they are accepted first),
  // continue. Idempotent, thread-safe, returns once the socket is closed.
  void close_listener();

  // Starts a graceful stop (a planned deploy): `/readyz` answers 503, the listener closes,
  // connections waiting for their next request close now, and every response from now on
  // closes its connection (`Connection: close`), so clients open new connections, which
  // reach the successor. Requests already being read or answered, the first request of a
  // connection that has had none yet, and open streams go on. With reuse_port, new
  // connections go to the successor at once and the listener closes a second later,
  // after accepting what reached it before (closing at once would reset the connections
  // queued at it). Idempotent, thread-safe.
  void begin_drain();

  // The end of a graceful stop, before close_connections(): closes the listener (as
  // close_listener(), so what the kernel queued at it is accepted), then waits until
  // every request the server has accepted has its response written (a stream: its head),
  // or until `deadline`. A connection that has sent nothing yet counts as one request: its
  // client connected before the listener closed and is about to send it, and closing it
  // unanswered would reset it although a successor may be listening. Requests are still
  // read and handled while it waits (a draining server takes no second request on a
  // connection). Returns true if none was left unanswered. Thread-safe; call it once the
  // drain has begun.
  bool finish_accepted(std::chrono::steady_clock::time_point deadline);

  // Accepted requests without a written response (see finish_accepted). Thread-safe.
  std::size_t unanswered_requests() const;

  // Closes every connection now, whatever it is doing (the drain's deadline has passed).
  // Thread-safe; returns before the sockets are closed (each closes on its own strand).
  void close_connections();

  // Connections accepted and not yet gone (idle, reading, answering or streaming).
  std::size_t open_connections() const;

  // Streamed responses (SSE) whose head was sent and whose body has not ended. Thread-safe.
  std::size_t open_streams() const;

  // Responses so far, by status code, in code order (codes with none are left out): every
  // response the server began to write, streamed ones and the 503s of refused connections
  // included. Thread-safe.
  std::vector<std::pair<int, std::uint64_t>> responses_by_status() const;

  // Stops serving: the listener and every connection close and the I/O threads end.
  // Responses given later are dropped (their connections are gone), so the server may
  // stop before the code that answers through it; it must still outlive that code's
  // last Respond call, since only destruction frees the connections. Idempotent; call
  // it from one thread.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::mcp
