// `dorm bench mcp` — tools/call over Streamable HTTP: dorm serve against the official
// TypeScript SDK server and the bare Beast ceiling, in one run, interleaved.
//
// The servers, each its own process on 127.0.0.1 with a port the system picks, started
// once and killed by PID on every way out (ServerProcess SIGKILLs a child it still holds
// when destroyed, PR_SET_PDEATHSIG does when this process dies, SIGINT or SIGTERM here
// kills them all; at the end each gets SIGTERM and must exit 0 within --start-timeout):
//  - dorm: `dorm serve --fixtures testing` (this program unless --dorm) over a fresh
//    RocksDB store in a temporary directory, with dorm serve's defaults otherwise (HTTP
//    I/O threads, durability `process`, priming events);
//  - sdk: tools/bench/sdk_echo_server.mjs, the SDK's StreamableHTTPServerTransport with
//    stateful sessions and the same `echo` tool, in memory;
//  - bare: `dorm bench http` (this program): Beast answering from memory in dorm's framing.
// Each round runs, for each connection count, every server in turn, in reverse order every
// other round. A run: the load generator (mcp_load.hpp, in this process, one thread) opens
// N sessions, calls through the warm-up, then through the measured span. Readings: calls/s,
// p50 and p99 latency, the server process's CPU time (all threads) over the span per call,
// and this process's. Figures are medians over the rounds; ratios, medians of the rounds'
// own ratios. A run whose span holds two windows or more also reports calls/s per window.
#include "mcp_bench.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "bench_stats.hpp"
#include "mcp_bench_report.hpp"
#include "mcp_load.hpp"
#include "server_process.hpp"
#include "source_root.hpp"

namespace dorm::bench {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using deploy_sim::ServerProcess;
using Clock = std::chrono::steady_clock;

namespace {

struct Server {
  std::string name;
  std::unique_ptr<ServerProcess> process;
  std::uint16_t port = 0;
};

struct BenchRun {
  const McpBenchOptions& o;
  fs::path dir;
  std::string dorm;  // the dorm binary of the dorm server
  std::string self;  // this program, for the bare server
  std::string node;
  std::string sdk_script;
  std::vector<Server> servers;
  McpSamples samples;
  std::int64_t failures = 0;
  std::string first_failure;
  std::string error;  // a server failed to start or to stop
};

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

double own_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// `name` itself when it holds a '/', else the first executable `name` on PATH.
Result<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return Error{ErrorCode::invalid_argument, "--node " + name + ": not an executable file"};
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    auto candidate = (fs::path(dir.empty() ? "." : dir) / name).string();
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return Error{ErrorCode::invalid_argument,
               "--node " + name + ": not found on PATH (the SDK server needs Node.js 20 or later)"};
}

// The command line of server `name`.
std::pair<std::string, std::vector<std::string>> command_of(const BenchRun& r,
                                                            const std::string& name) {
  if (name == "dorm") {
    return {r.dorm,
            {"serve", "--listen", "127.0.0.1:0", "--storage",
             "rocksdb:" + (r.dir / "dorm-store").string(), "--fixtures", "testing", "--log-level",
             "warn", "--log-format", "json"}};
  }
  if (name == "sdk") return {r.node, {r.sdk_script, "--port", "0"}};
  return {r.self, {"bench", "http", "--listen", "127.0.0.1:0"}};
}

// Starts server `name` and waits for its ready line. Empty on success.
asio::awaitable<std::string> start(BenchRun& r, const std::string& name) {
  auto [exe, args] = command_of(r, name);
  auto process = ServerProcess::start(co_await asio::this_coro::executor, exe, args);
  if (!process) co_return name + " server: " + process.error().message;
  // Kept in r.servers at once, so it is killed with the others whatever happens next.
  r.servers.push_back(Server{name, std::move(*process), 0});
  auto& s = r.servers.back();
  auto port = co_await s.process->ready(Clock::now() + ms(r.o.start_timeout));
  if (!port) {
    co_return name + " server did not print its ready line within " +
        std::to_string(r.o.start_timeout) + " s: " + s.process->describe();
  }
  s.port = *port;
  std::printf("server %s: pid %d, port %u\n", name.c_str(), static_cast<int>(s.process->pid()),
              static_cast<unsigned>(s.port));
  std::fflush(stdout);
  co_return std::string();
}

// The figures of one run; `window_cpu_s` holds the server's CPU seconds in each window.
McpSample sample_of(const mcp_load::LoadResult& result, double server_cpu_s, double client_cpu_s,
                    const std::vector<double>& window_cpu_s) {
  McpSample x;
  x.calls_per_s = result.calls_per_second();
  x.p50_ms = percentile(result.latencies_ms, 50);
  x.p99_ms = percentile(result.latencies_ms, 99);
  auto per_call_us = [](double cpu_s, double calls) { return calls > 0 ? cpu_s / calls * 1e6 : 0; };
  auto calls = static_cast<double>(result.latencies_ms.size());
  x.server_cpu_us = per_call_us(server_cpu_s, calls);
  x.client_cpu_us = per_call_us(client_cpu_s, calls);
  double window_s =
      result.seconds / static_cast<double>(std::max<std::size_t>(1, result.window_calls.size()));
  for (std::size_t w = 0; w < result.window_calls.size(); ++w) {
    auto n = static_cast<double>(result.window_calls[w]);
    x.window_rates.push_back(n / window_s);
    x.window_server_cpu_us.push_back(w < window_cpu_s.size() ? per_call_us(window_cpu_s[w], n) : 0);
  }
  return x;
}

void note_failures(BenchRun& r, const Server& s, int connections,
                   const mcp_load::LoadResult& result) {
  if (result.failures == 0) return;
  if (r.failures == 0) {
    r.first_failure =
        s.name + ", " + std::to_string(connections) + " connections: " + result.first_failure;
  }
  r.failures += result.failures;
}

asio::awaitable<void> measure(BenchRun& r, const Server& s, int connections, int round) {
  mcp_load::LoadOptions lo;
  lo.port = s.port;
  lo.connections = connections;
  lo.warmup = ms(r.o.warmup);
  lo.measure = ms(r.o.seconds);
  lo.window = ms(r.o.window);
  lo.timeout = ms(r.o.timeout);
  // CPU readings at the span's start, at each window's end and at the span's end.
  const pid_t pid = s.process->pid();
  double server_at_start = 0, client_at_start = 0, server_cpu = 0, client_cpu = 0, last = 0;
  std::vector<double> window_cpu;
  lo.span_started = [&] {
    last = server_at_start = process_cpu_seconds(pid);
    client_at_start = own_cpu_seconds();
  };
  lo.window_ended = [&] {
    double now = process_cpu_seconds(pid);
    window_cpu.push_back(now - last);
    last = now;
  };
  lo.span_ended = [&] {
    server_cpu = process_cpu_seconds(pid) - server_at_start;
    client_cpu = own_cpu_seconds() - client_at_start;
  };
  auto result = co_await mcp_load::run_load(std::move(lo));
  McpSample x = sample_of(result, server_cpu, client_cpu, window_cpu);
  note_failures(r, s, connections, result);
  std::printf("round %d, %d connections, %s: %.0f calls/s, p50 %.2f ms, p99 %.2f ms, ", round,
              connections, s.name.c_str(), x.calls_per_s, x.p50_ms, x.p99_ms);
  std::printf("server CPU %.0f us/call, client CPU %.0f us/call, %lld failed\n", x.server_cpu_us,
              x.client_cpu_us, static_cast<long long>(result.failures));
  r.samples[{s.name, connections}].push_back(std::move(x));
}

asio::awaitable<void> run_rounds(BenchRun& r) {
  for (int round = 1; round <= r.o.rounds; ++round) {
    for (int connections : r.o.connections) {
      std::vector<const Server*> order;
      for (const auto& s : r.servers) order.push_back(&s);
      if (round % 2 == 0) std::reverse(order.begin(), order.end());
      for (const auto* s : order) co_await measure(r, *s, connections, round);
    }
  }
}

// SIGTERM to each server in turn; each must exit 0 within --start-timeout, else it is
// killed. How long each took is printed: issue 22 saw a server busy minutes after it.
asio::awaitable<void> stop_servers(BenchRun& r) {
  for (auto& s : r.servers) {
    auto signalled = Clock::now();
    s.process->signal(SIGTERM);
    auto status = co_await s.process->exited(signalled + ms(r.o.start_timeout));
    auto took = std::chrono::duration<double, std::milli>(Clock::now() - signalled).count();
    std::string what = status ? deploy_sim::describe_wait_status(*status) : "still running: killed";
    if (!status) {
      s.process->signal(SIGKILL);
      co_await s.process->exited(Clock::now() + ms(r.o.start_timeout));
    }
    if ((!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) && r.error.empty()) {
      r.error = s.name + " server did not stop cleanly after SIGTERM: " + s.process->describe();
    }
    std::printf("server %s: pid %d %s, %.0f ms after SIGTERM\n", s.name.c_str(),
                static_cast<int>(s.process->pid()), what.c_str(), took);
  }
  std::fflush(stdout);
}

asio::awaitable<void> run_all(BenchRun& r) {
  for (const auto& name : kMcpServers) {
    if (std::find(r.o.servers.begin(), r.o.servers.end(), name) == r.o.servers.end()) continue;
    if (auto e = co_await start(r, name); !e.empty()) {
      r.error = e;
      co_return;
    }
  }
  std::printf("load average at start: %s\n", load_average().c_str());
  co_await run_rounds(r);
  std::printf("load average at end: %s\n", load_average().c_str());
  co_await stop_servers(r);
}

// SIGINT or SIGTERM: the servers are killed and reaped, the store removed, and the
// program exits at once with 130 (coroutines are not unwound: nothing they hold outlives
// the process).
[[noreturn]] void exit_interrupted(const fs::path& dir) {
  int killed = ServerProcess::kill_all();
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  std::fprintf(stderr, "dorm bench mcp: interrupted; %d server(s) killed\n", killed);
  std::fflush(stdout);
  std::_Exit(130);
}

void run_on_one_thread(BenchRun& r) {
  asio::io_context io;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) exit_interrupted(r.dir);
  });
  asio::co_spawn(io, run_all(r), [&](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        r.error = x.what();
      }
    }
    // Kills and reaps any server still running (after an error) while the io_context
    // its pipes belong to still exists.
    r.servers.clear();
    io.stop();
  });
  io.run();
}

// What can be checked before any server starts. Empty when all is well.
std::string check_options(const McpBenchOptions& o) {
  if (o.servers.empty()) return "--servers: name at least one of dorm, sdk, bare";
  if (std::set(o.servers.begin(), o.servers.end()).size() != o.servers.size())
    return "--servers: a server is named twice";
  if (o.connections.empty()) return "--connections: give at least one count";
  if (std::set(o.connections.begin(), o.connections.end()).size() != o.connections.size())
    return "--connections: a count is given twice";
  if (o.window > o.seconds) return "--window must not be longer than --seconds";
  return {};
}

}  // namespace

int run_mcp_bench(const McpBenchOptions& o) {
  auto fail = [](const std::string& what) {
    std::fprintf(stderr, "dorm bench mcp: %s\n", what.c_str());
    return 1;
  };
  if (auto e = check_options(o); !e.empty()) return fail(e);
  // Each line as it is printed, even into a pipe or a file: a script watching the output
  // (for a server's pid, to profile it) must see it when it happens.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  BenchRun r{o, {}, {}, {}, {}, {}, {}, {}, 0, {}, {}};
  auto dorm = deploy_sim::server_binary(o.dorm);
  auto self = deploy_sim::server_binary("");
  if (!dorm || !self) return fail((dorm ? self : dorm).error().message);
  r.dorm = *dorm;
  r.self = *self;
  if (std::find(o.servers.begin(), o.servers.end(), "sdk") != o.servers.end()) {
    auto node = find_program(o.node);
    if (!node) return fail(node.error().message);
    r.node = *node;
    r.sdk_script = o.sdk_server.empty()
                       ? std::string(kSourceRoot) + "/tools/bench/sdk_echo_server.mjs"
                       : o.sdk_server;
    if (!fs::is_regular_file(r.sdk_script))
      return fail("--sdk-server " + r.sdk_script + ": no such file");
  }
  auto dir = deploy_sim::make_temp_dir("dorm-bench-mcp");
  if (!dir) return fail(dir.error().message);
  r.dir = *dir;

  std::printf(
      "dorm bench mcp: %d round(s); per run %.1f s measured after %.1f s of warm-up; connections",
      o.rounds, o.seconds, o.warmup);
  for (int c : o.connections) std::printf(" %d", c);
  std::printf("; one client thread in this process; store in %s\n", r.dir.c_str());
  std::fflush(stdout);
  run_on_one_thread(r);
  std::error_code ignored;
  fs::remove_all(r.dir, ignored);
  if (!r.error.empty()) return fail(r.error);
  print_mcp_report(o, r.samples);
  if (r.failures > 0) {
    return fail(std::to_string(r.failures) +
                " call(s) or session(s) failed; the first: " + r.first_failure);
  }
  return 0;
}

}  // namespace dorm::bench
