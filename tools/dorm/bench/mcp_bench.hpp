// `dorm bench mcp`: tools/call throughput and latency of `dorm serve` over HTTP, side by
// side in one run with the official TypeScript SDK server and the bare Beast ceiling of
// `dorm bench http` (see mcp_bench.cpp and docs/benchmarks.md).
#pragma once

#include <string>
#include <vector>

namespace dorm::bench {

struct McpBenchOptions {
  // Which servers to start and drive, of "dorm", "sdk" and "bare".
  std::vector<std::string> servers{"dorm", "sdk", "bare"};
  std::vector<int> connections{16, 64};  // a run of each per server and round
  int rounds = 5;                        // figures are medians over them
  double seconds = 10;                   // measured span of each run
  double warmup = 2;                     // calls before the span, not counted
  double window = 10;                    // calls/s is also reported per window this long
  double timeout = 30;                   // bound on each exchange of the client
  double start_timeout = 60;             // bound on each server's start and stop
  std::string dorm;                      // dorm binary (default: this program)
  std::string node = "node";             // Node.js for the SDK server (a path or a name on PATH)
  std::string sdk_server;  // the SDK server script (default: tools/bench/sdk_echo_server.mjs)
};

// Prints each run's figures, then the table, the flatness windows and the targets.
// Returns 0, or 1 when a server failed to start or stop or any call failed.
int run_mcp_bench(const McpBenchOptions& options);

}  // namespace dorm::bench
