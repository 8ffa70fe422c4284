// The figures of `dorm bench mcp` and how they are printed: a table of medians over the
// rounds with dorm's ratios to each baseline, calls/s per window (is the rate flat over
// a long run?), and issue 22's targets, each said to be met or not.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mcp_bench.hpp"

namespace dorm::bench {

// One run: one server, one connection count, one round.
struct McpSample {
  double calls_per_s = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double server_cpu_us = 0;          // the server process's CPU time over the span, per call
  double client_cpu_us = 0;          // the load generator's, per call
  std::vector<double> window_rates;  // calls/s in each whole window of the span
  // The server's CPU time per call in each window: unlike calls/s, it does not move with
  // what else runs on the machine, so it shows per-call growth on a shared machine too.
  std::vector<double> window_server_cpu_us;
};

// Per server and connection count, one sample per round, in round order.
using McpSamples = std::map<std::pair<std::string, int>, std::vector<McpSample>>;

// The servers in the order of the table's columns (dorm first: the subject).
inline const std::vector<std::string> kMcpServers{"dorm", "sdk", "bare"};

void print_mcp_report(const McpBenchOptions& options, const McpSamples& samples);

}  // namespace dorm::bench
