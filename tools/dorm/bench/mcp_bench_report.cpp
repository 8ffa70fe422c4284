#include "mcp_bench_report.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>

#include "bench_stats.hpp"

namespace dorm::bench {

namespace {

// Issue 22's targets, at the largest connection count (64 in the issue).
constexpr double kMinSdkRatio = 5;
constexpr double kMaxP99Ms = 50;
constexpr double kMinBareRatio = 0.25;
constexpr double kMinFlatRatio = 0.9;  // the last window within 10 % of the first

using Field = double McpSample::*;

std::vector<std::string> present(const McpBenchOptions& o) {
  std::vector<std::string> out;
  for (const auto& name : kMcpServers) {
    if (std::find(o.servers.begin(), o.servers.end(), name) != o.servers.end()) out.push_back(name);
  }
  return out;
}

bool has(const std::vector<std::string>& servers, const std::string& name) {
  return std::find(servers.begin(), servers.end(), name) != servers.end();
}

std::optional<double> median_of(const McpSamples& s, const std::string& server, int connections,
                                Field f) {
  auto it = s.find({server, connections});
  if (it == s.end() || it->second.empty()) return std::nullopt;
  std::vector<double> v;
  for (const auto& x : it->second) v.push_back(x.*f);
  return median(v);
}

// The median over the rounds of dorm's calls/s over `base`'s, round by round.
std::optional<double> median_ratio(const McpSamples& s, const std::string& base, int connections) {
  auto d = s.find({"dorm", connections});
  auto b = s.find({base, connections});
  if (d == s.end() || b == s.end()) return std::nullopt;
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(d->second.size(), b->second.size()); ++i) {
    if (b->second[i].calls_per_s > 0)
      ratios.push_back(d->second[i].calls_per_s / b->second[i].calls_per_s);
  }
  if (ratios.empty()) return std::nullopt;
  return median(ratios);
}

std::string cell(std::optional<double> v, const char* format) {
  if (!v) return "–";
  char text[64];
  std::snprintf(text, sizeof text, format, *v);
  return text;
}

// " text |": one cell of a markdown row, appended (g++ 12 misreads `" " + std::string`
// as an overlapping copy under -O2: -Wrestrict).
void add_cell(std::string& line, std::string_view text) {
  line.append(" ").append(text).append(" |");
}

void print_table(const McpBenchOptions& o, const McpSamples& s) {
  auto servers = present(o);
  bool dorm = has(servers, "dorm");
  std::string head = "| row | unit |", rule = "|---|---|";
  for (const auto& name : servers) {
    add_cell(head, name);
    rule += "---:|";
    if (dorm && name != "dorm") {
      add_cell(head, "dorm / " + name);
      rule += "---:|";
    }
  }
  std::printf("\n%s\n%s\n", head.c_str(), rule.c_str());
  struct Row {
    const char* label;
    const char* unit;
    Field field;
    const char* format;
  };
  const Row rows[] = {{"calls", "calls/s", &McpSample::calls_per_s, "%.0f"},
                      {"p50 latency", "ms", &McpSample::p50_ms, "%.2f"},
                      {"p99 latency", "ms", &McpSample::p99_ms, "%.2f"},
                      {"server CPU per call", "us", &McpSample::server_cpu_us, "%.0f"},
                      {"client CPU per call", "us", &McpSample::client_cpu_us, "%.0f"}};
  for (int c : o.connections) {
    for (const auto& row : rows) {
      std::string line = "| tools/call echo, " + std::to_string(c) + " connections, " + row.label +
                         " | " + row.unit + " |";
      for (const auto& name : servers) {
        add_cell(line, cell(median_of(s, name, c, row.field), row.format));
        if (dorm && name != "dorm") {
          auto ratio =
              row.field == &McpSample::calls_per_s ? median_ratio(s, name, c) : std::nullopt;
          add_cell(line, cell(ratio, "%.2f"));
        }
      }
      std::printf("%s\n", line.c_str());
    }
  }
}

// The last window's figure over the first's, when there are two windows or more.
std::optional<double> last_over_first(const std::vector<double>& windows) {
  if (windows.size() < 2 || windows.front() <= 0) return std::nullopt;
  return windows.back() / windows.front();
}

std::string joined(const std::vector<double>& values) {
  std::string out;
  for (double v : values) out.append(out.empty() ? "" : ", ").append(cell(v, "%.0f"));
  return out;
}

void print_flatness(const McpBenchOptions& o, const McpSamples& s) {
  if (o.seconds / o.window < 2) return;
  std::printf(
      "\n| server | connections | round | calls/s per %g s window | last / first "
      "| server CPU per call per window, us | last / first |\n",
      o.window);
  std::printf("|---|---:|---:|---|---:|---|---:|\n");
  for (const auto& name : present(o)) {
    for (int c : o.connections) {
      auto it = s.find({name, c});
      if (it == s.end()) continue;
      for (std::size_t round = 0; round < it->second.size(); ++round) {
        const auto& x = it->second[round];
        std::printf("| %s | %d | %zu | %s | %s | %s | %s |\n", name.c_str(), c, round + 1,
                    joined(x.window_rates).c_str(),
                    cell(last_over_first(x.window_rates), "%.2f").c_str(),
                    joined(x.window_server_cpu_us).c_str(),
                    cell(last_over_first(x.window_server_cpu_us), "%.2f").c_str());
      }
    }
  }
}

void print_target(const char* what, std::optional<double> value, bool met, const char* format) {
  std::printf("- %s: %s (%s)\n", what,
              !value ? "not measured"
              : met  ? "met"
                     : "NOT met",
              cell(value, format).c_str());
}

// The flatness target on calls/s, and beside it (for information) the same ratio of
// the server's CPU per call, which the machine's other load does not move.
void print_flatness_target(const McpSamples& s, int connections) {
  auto it = s.find({"dorm", connections});
  if (it == s.end()) return;
  std::vector<double> rate, cpu;
  for (const auto& x : it->second) {
    if (auto f = last_over_first(x.window_rates)) rate.push_back(*f);
    if (auto f = last_over_first(x.window_server_cpu_us)) cpu.push_back(*f);
  }
  if (rate.empty()) return;
  double f = median(rate);
  print_target("dorm's last window within 10 % of its first (calls/s, last / first)", f,
               f >= kMinFlatRatio && f <= 2 - kMinFlatRatio, "%.2f");
  if (!cpu.empty()) {
    std::printf("  (server CPU per call, last window / first: %.2f)\n", median(cpu));
  }
}

void print_targets(const McpBenchOptions& o, const McpSamples& s) {
  auto servers = present(o);
  if (!has(servers, "dorm")) return;
  int c = *std::max_element(o.connections.begin(), o.connections.end());
  std::printf("\ntargets (issue 22) at %d connections, medians over %d round(s):\n", c, o.rounds);
  if (has(servers, "sdk")) {
    auto r = median_ratio(s, "sdk", c);
    print_target("dorm >= 5x the SDK server's calls/s", r, r && *r >= kMinSdkRatio, "%.2fx");
  }
  auto p99 = median_of(s, "dorm", c, &McpSample::p99_ms);
  print_target("dorm p99 <= 50 ms", p99, p99 && *p99 <= kMaxP99Ms, "%.2f ms");
  if (has(servers, "bare")) {
    auto r = median_ratio(s, "bare", c);
    print_target("dorm >= 0.25x the bare Beast ceiling", r, r && *r >= kMinBareRatio, "%.2fx");
  }
  print_flatness_target(s, c);
}

}  // namespace

void print_mcp_report(const McpBenchOptions& o, const McpSamples& samples) {
  print_table(o, samples);
  print_flatness(o, samples);
  print_targets(o, samples);
  std::fflush(stdout);
}

}  // namespace dorm::bench
