// `dorm bench streams` — many open standalone GET streams on one `dorm serve`.
//
// Each round starts a fresh `dorm serve --fixtures testing` (this program unless --dorm) on
// 127.0.0.1 over a new RocksDB store, killed by PID on every way out as in `dorm bench mcp`,
// and this process, one client thread, then:
//   1. opens --streams sessions (initialize, notifications/initialized), each over a
//      connection closed after it, and reads the server's RSS before and after (per
//      session, for reference); then reads the server's CPU time over --keepalive seconds
//      of idling;
//   2. opens the standalone GET stream of every one of them, each on a new connection as
//      a client's is, and waits for every response head; the streams are then read (a
//      priming event, keep-alives) and never written to;
//   3. leaves them idle for --keepalive seconds (one keep-alive per stream every 15 s) and
//      reads the server's CPU time over that window (beyond step 1's: the keep-alives'
//      cost) and its RSS after it: RSS per open
//      stream is the growth from just before step 2 to this reading, per stream;
//   4. measures tools/call echo on --connections other sessions (mcp_load.hpp) with the
//      streams open, and once with them closed: before step 2 in odd rounds, after closing
//      the streams in even ones, so neither side always runs first. Both have the idle
//      sessions resident.
// Then SIGTERM, and the server must exit 0 within --start-timeout (its time is printed).
// Figures are medians over the rounds; the ratio is the median of the rounds' own ratios.
#include "streams_bench.hpp"

#include <sys/resource.h>
#include <sys/wait.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "bench_stats.hpp"
#include "mcp_load.hpp"
#include "notifier.hpp"
#include "server_process.hpp"

namespace dorm::bench {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using deploy_sim::ServerProcess;
using Clock = std::chrono::steady_clock;

namespace {

// dorm serve writes a keep-alive comment on an idle stream this often (SseSinkOptions).
constexpr double kKeepAliveSeconds = 15;
// Connections beyond the streams and the load that dorm serve is allowed, so the bench
// never meets its connection limit.
constexpr int kConnectionSlack = 1000;

struct LoadFigures {
  double calls_per_s = 0, p50_ms = 0, p99_ms = 0;
};

struct RoundFigures {
  double kib_per_session = 0;  // step 1
  double kib_per_stream = 0;   // step 3
  double idle_cpu_pct = 0;       // no stream open
  double keepalive_cpu_pct = 0;  // every stream open and idle
  double keepalive_us = 0;       // the difference, per keep-alive sent
  int streams_with_bytes = 0;
  LoadFigures closed, open;
  double exit_ms = 0;
};

struct Run {
  const StreamsBenchOptions& o;
  fs::path dir;
  std::string dorm;
  std::vector<RoundFigures> rounds;
  std::string error;  // the first thing that went wrong
};

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

asio::awaitable<std::unique_ptr<ServerProcess>> start_server(Run& r, int round, std::uint16_t& port) {
  const int limit = r.o.streams + r.o.connections + kConnectionSlack;
  std::vector<std::string> args{"serve", "--listen", "127.0.0.1:0", "--storage",
                                "rocksdb:" + (r.dir / ("round-" + std::to_string(round))).string(),
                                "--fixtures", "testing", "--max-connections", std::to_string(limit),
                                "--log-level", "warn", "--log-format", "json"};
  auto process = ServerProcess::start(co_await asio::this_coro::executor, r.dorm, args);
  if (!process) throw std::runtime_error("dorm serve: " + process.error().message);
  auto server = std::move(*process);
  auto ready = co_await server->ready(Clock::now() + ms(r.o.start_timeout));
  if (!ready) {
    throw std::runtime_error("dorm serve did not print its ready line within " +
                             std::to_string(r.o.start_timeout) + " s: " + server->describe());
  }
  port = *ready;
  std::printf("round %d: server pid %d, port %u\n", round, static_cast<int>(server->pid()),
              static_cast<unsigned>(port));
  co_return server;
}

asio::awaitable<LoadFigures> load(Run& r, std::uint16_t port, const char* what) {
  mcp_load::LoadOptions lo;
  lo.port = port;
  lo.connections = r.o.connections;
  lo.warmup = ms(r.o.warmup);
  lo.measure = ms(r.o.seconds);
  lo.window = ms(r.o.seconds);
  lo.timeout = ms(r.o.timeout);
  auto result = co_await mcp_load::run_load(std::move(lo));
  if (result.failures > 0) {
    throw std::runtime_error(std::to_string(result.failures) + " call(s) failed with the streams " +
                             what + "; the first: " + result.first_failure);
  }
  LoadFigures f{result.calls_per_second(), percentile(result.latencies_ms, 50),
                percentile(result.latencies_ms, 99)};
  std::printf("  tools/call on %d other sessions, streams %s: %.0f calls/s, p50 %.2f ms, p99 %.2f ms\n",
              r.o.connections, what, f.calls_per_s, f.p50_ms, f.p99_ms);
  co_return f;
}

void check_held(const mcp_load::HeldStreams& held, const char* step) {
  if (held.failures() > 0) {
    throw std::runtime_error(std::string(step) + ": " + std::to_string(held.failures()) +
                             " failed; the first: " + held.first_failure());
  }
}

asio::awaitable<RoundFigures> run_round(Run& r, int round) {
  RoundFigures f;
  std::uint16_t port = 0;
  auto server = co_await start_server(r, round, port);
  const pid_t pid = server->pid();
  const auto n = static_cast<double>(r.o.streams);

  mcp_load::HoldOptions ho;
  ho.port = port;
  ho.sessions = r.o.streams;
  ho.parallel = r.o.parallel;
  ho.timeout = ms(r.o.timeout);
  const long rss_empty = process_rss_kib(pid);
  auto held = co_await mcp_load::HeldStreams::open_sessions(ho);
  check_held(*held, "opening sessions");
  const long rss_sessions = process_rss_kib(pid);
  f.kib_per_session = static_cast<double>(rss_sessions - rss_empty) / n;

  // The server's own idle CPU (timers, storage housekeeping) over the same window, so
  // what the streams' keep-alives cost is the difference.
  double cpu_before = process_cpu_seconds(pid);
  co_await deploy_sim::sleep_until(Clock::now() + ms(r.o.keepalive));
  const double idle_cpu = process_cpu_seconds(pid) - cpu_before;
  f.idle_cpu_pct = idle_cpu / r.o.keepalive * 100;

  const bool streams_first = round % 2 == 0;
  if (!streams_first) f.closed = co_await load(r, port, "closed");

  // Read here, after a first load run too: what that run left behind is not the streams'.
  const long rss_before_streams = process_rss_kib(pid);
  co_await held->open_streams();
  check_held(*held, "opening GET streams");
  if (held->streams_open() != r.o.streams) {
    throw std::runtime_error(std::to_string(held->streams_open()) + " of " +
                             std::to_string(r.o.streams) + " streams are open");
  }
  held->mark_received();
  cpu_before = process_cpu_seconds(pid);
  co_await deploy_sim::sleep_until(Clock::now() + ms(r.o.keepalive));
  const double cpu = process_cpu_seconds(pid) - cpu_before;
  f.streams_with_bytes = held->streams_with_bytes();
  f.keepalive_cpu_pct = cpu / r.o.keepalive * 100;
  f.keepalive_us = (cpu - idle_cpu) * 1e6 / (n * r.o.keepalive / kKeepAliveSeconds);
  f.kib_per_stream = static_cast<double>(process_rss_kib(pid) - rss_before_streams) / n;
  if (held->streams_open() != r.o.streams) {
    throw std::runtime_error("streams ended while idle: " + std::to_string(held->streams_open()) +
                             " of " + std::to_string(r.o.streams) + " open");
  }
  std::printf("  %d streams open: %.2f KiB each (sessions alone %.2f KiB each); idle for %.0f s: "
              "server CPU %.2f %% of a core (%.2f %% with no stream), %d streams received bytes\n",
              r.o.streams, f.kib_per_stream, f.kib_per_session, r.o.keepalive, f.keepalive_cpu_pct,
              f.idle_cpu_pct, f.streams_with_bytes);

  f.open = co_await load(r, port, "open");
  co_await held->close();
  if (streams_first) f.closed = co_await load(r, port, "closed");
  held.reset();

  auto signalled = Clock::now();
  server->signal(SIGTERM);
  auto status = co_await server->exited(signalled + ms(r.o.start_timeout));
  f.exit_ms = std::chrono::duration<double, std::milli>(Clock::now() - signalled).count();
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error("dorm serve did not stop cleanly after SIGTERM: " + server->describe());
  }
  std::printf("  server exited 0, %.0f ms after SIGTERM\n", f.exit_ms);
  std::fflush(stdout);
  co_return f;
}

asio::awaitable<void> run_all(Run& r) {
  std::printf("load average at start: %s\n", load_average().c_str());
  for (int round = 1; round <= r.o.rounds; ++round) r.rounds.push_back(co_await run_round(r, round));
  std::printf("load average at end: %s\n", load_average().c_str());
}

template <class Get>
double median_of(const std::vector<RoundFigures>& rounds, Get get) {
  std::vector<double> v;
  for (const auto& f : rounds) v.push_back(get(f));
  return median(v);
}

void print_report(const Run& r) {
  const auto& x = r.rounds;
  auto m = [&](auto get) { return median_of(x, get); };
  double p99_ratio = m([](const RoundFigures& f) { return f.closed.p99_ms > 0 ? f.open.p99_ms / f.closed.p99_ms : 0; });
  double p50_ratio = m([](const RoundFigures& f) { return f.closed.p50_ms > 0 ? f.open.p50_ms / f.closed.p50_ms : 0; });
  double per_stream = m([](const RoundFigures& f) { return f.kib_per_stream; });
  std::printf("\n| row | unit | median of %d round(s) |\n|---|---|---:|\n", r.o.rounds);
  std::printf("| open standalone GET streams | count | %d |\n", r.o.streams);
  std::printf("| RSS per open stream | KiB | %.2f |\n", per_stream);
  std::printf("| RSS per initialized session, no stream (for reference) | KiB | %.2f |\n",
              m([](const RoundFigures& f) { return f.kib_per_session; }));
  std::printf("| server CPU, idle, no stream open | %% of one core | %.2f |\n",
              m([](const RoundFigures& f) { return f.idle_cpu_pct; }));
  std::printf("| server CPU, idle, every stream open | %% of one core | %.2f |\n",
              m([](const RoundFigures& f) { return f.keepalive_cpu_pct; }));
  std::printf("| server CPU per keep-alive (the difference) | us | %.1f |\n",
              m([](const RoundFigures& f) { return f.keepalive_us; }));
  std::printf("| streams that received a keep-alive in %.0f s | count | %.0f |\n", r.o.keepalive,
              m([](const RoundFigures& f) { return static_cast<double>(f.streams_with_bytes); }));
  std::printf("| tools/call p50, streams closed / open | ms | %.2f / %.2f |\n",
              m([](const RoundFigures& f) { return f.closed.p50_ms; }), m([](const RoundFigures& f) { return f.open.p50_ms; }));
  std::printf("| tools/call p99, streams closed / open | ms | %.2f / %.2f |\n",
              m([](const RoundFigures& f) { return f.closed.p99_ms; }), m([](const RoundFigures& f) { return f.open.p99_ms; }));
  std::printf("| tools/call calls/s, streams closed / open | calls/s | %.0f / %.0f |\n",
              m([](const RoundFigures& f) { return f.closed.calls_per_s; }),
              m([](const RoundFigures& f) { return f.open.calls_per_s; }));
  std::printf("| tools/call p50 ratio, open / closed | ratio | %.2f |\n", p50_ratio);
  std::printf("| tools/call p99 ratio, open / closed | ratio | %.2f |\n", p99_ratio);
  std::printf("| exit after SIGTERM (streams closed by then) | ms | %.0f |\n",
              m([](const RoundFigures& f) { return f.exit_ms; }));
  std::printf("\ntargets (issue 22): RSS per open stream <= 8 KiB: %s (%.2f); p99 of calls on other "
              "sessions within 20 %% with the streams open: %s (%.2f)\n",
              per_stream <= 8 ? "met" : "not met", per_stream, p99_ratio <= 1.2 ? "met" : "not met",
              p99_ratio);
}

// SIGINT or SIGTERM here: the server is killed and reaped, the store removed, exit 130.
[[noreturn]] void exit_interrupted(const fs::path& dir) {
  int killed = ServerProcess::kill_all();
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  std::fprintf(stderr, "dorm bench streams: interrupted; %d server(s) killed\n", killed);
  std::fflush(stdout);
  std::_Exit(130);
}

// This process holds a socket per stream and per load connection: its descriptor soft
// limit goes to the hard one, which must leave room for them. Empty when all is well.
std::string raise_descriptor_limit(int needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return "getrlimit failed";
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return "setrlimit failed";
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < static_cast<rlim_t>(needed)) {
    return "--streams " + std::to_string(needed) + " needs about that many descriptors; the hard limit is " +
           std::to_string(limit.rlim_cur) + " (raise it with ulimit -Hn)";
  }
  return {};
}

}  // namespace

int run_streams_bench(const StreamsBenchOptions& o) {
  auto fail = [](const std::string& what) {
    std::fprintf(stderr, "dorm bench streams: %s\n", what.c_str());
    return 1;
  };
  if (auto e = raise_descriptor_limit(o.streams + o.connections + 64); !e.empty()) return fail(e);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Run r{o, {}, {}, {}, {}};
  auto dorm = deploy_sim::server_binary(o.dorm);
  if (!dorm) return fail(dorm.error().message);
  r.dorm = *dorm;
  auto dir = deploy_sim::make_temp_dir("dorm-bench-streams");
  if (!dir) return fail(dir.error().message);
  r.dir = *dir;
  std::printf("dorm bench streams: %d round(s), %d streams, tools/call on %d other connections for "
              "%.1f s after %.1f s of warm-up, %.0f s idle; store in %s\n",
              o.rounds, o.streams, o.connections, o.seconds, o.warmup, o.keepalive, r.dir.c_str());
  {
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
      ServerProcess::kill_all();
      io.stop();
    });
    io.run();
  }
  std::error_code ignored;
  fs::remove_all(r.dir, ignored);
  if (!r.error.empty()) return fail(r.error);
  print_report(r);
  return 0;
}

}  // namespace dorm::bench
