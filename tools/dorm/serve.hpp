// `dorm serve`: bind, open storage, become ready, serve until SIGTERM or SIGINT.
#pragma once

#include <string>

namespace dorm::tools {

struct ServeOptions {
  std::string listen = "127.0.0.1:8808";
  std::string storage = "rocksdb:./dorm-data";
  int http_threads = 2;
  // Where finished spans go, one OTLP JSON line each; empty = no tracing.
  std::string trace_file;
};

// Runs the server in the calling thread until a stop signal; returns the exit status
// (0 after a signal, 1 when start-up failed, with the reason logged).
int serve(const ServeOptions& options);

}  // namespace dorm::tools
