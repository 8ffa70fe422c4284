// HttpServer — the HTTP front of `dorm serve`, on Boost.Beast.
//
// Asynchronous end to end: a few I/O threads run every connection; no handler blocks on
// anything but its socket. The server binds before storage is opened, so `/healthz`
// answers 200 as soon as the socket is bound while `/readyz` answers 503 until
// set_ready(true). Beast and Asio stay inside http_server.cpp (they cost ~24 s per
// translation unit); this header exposes none of their types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dorm/mcp/listen_address.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

class HttpServer {
 public:
  struct Options {
    ListenAddress listen{"127.0.0.1", 8808};
    int io_threads = 2;
    // Largest request body accepted; a larger one gets 413.
    std::size_t max_body_bytes = 4 * 1024 * 1024;
    // A connection with no complete request for this long is closed.
    int idle_timeout_seconds = 60;
  };

  // Resolves and binds options.listen (with SO_REUSEADDR, so a restart right after a
  // killed predecessor can bind), listens, and starts the I/O threads.
  // Errors: invalid_argument if the host does not resolve; io_error if binding fails
  // (the message names the address and the OS error, e.g. "Address already in use").
  static Result<std::unique_ptr<HttpServer>> start(const Options& options);

  // Stops accepting, ends every connection and joins the I/O threads.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound address; its port is the real one when 0 was asked for.
  ListenAddress local_address() const;

  // From now on `/readyz` answers 200 (true) or 503 (false). Thread-safe.
  void set_ready(bool ready);

  // Closes the listening socket so a successor can bind the port; connections already
  // accepted continue. Idempotent, thread-safe, returns once the socket is closed.
  void close_listener();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::mcp
