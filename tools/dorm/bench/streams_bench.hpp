// `dorm bench streams`: what many open standalone GET streams cost `dorm serve` — resident
// memory per stream, CPU of their keep-alives, and the latency of tools/call on other
// sessions while they are open against while they are not (see streams_bench.cpp and
// docs/benchmarks.md, "Many open streams").
#pragma once

#include <string>

namespace dorm::bench {

struct StreamsBenchOptions {
  int streams = 10'000;      // sessions, each holding its standalone GET stream
  int rounds = 5;            // figures are medians over them; a fresh server each round
  int connections = 16;      // the load on other sessions (tools/call echo back to back)
  double seconds = 5;        // measured span of each load run
  double warmup = 1;         // calls before the span, not counted
  double keepalive = 16;     // seconds of idle streams whose server CPU is read
  double timeout = 60;       // bound on each exchange of the client
  double start_timeout = 60; // bound on each server's start and stop
  int parallel = 64;         // connections opening at once
  std::string dorm;          // dorm binary (default: this program)
};

// Prints each round's figures, then the table and the targets. Returns 0, or 1 when the
// server failed to start or stop, or a session, stream or call failed.
int run_streams_bench(const StreamsBenchOptions& options);

}  // namespace dorm::bench
