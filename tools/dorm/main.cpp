// dorm — the command-line program: serve, inspect, bench (and later deploy-sim).
#include <CLI/CLI.hpp>
#include <map>
#include <spdlog/spdlog.h>

#include "dorm/runtime/log.hpp"
#include "inspect.hpp"
#include "serve.hpp"
#ifdef DORM_WITH_BENCH
#include "bench/boot_bench.hpp"
#include "bench/engine_bench.hpp"
#include "bench/execute_bench.hpp"
#include "bench/eviction_bench.hpp"
#include "bench/runtime_bench.hpp"
#include "bench/storage_bench.hpp"
#endif
#include "version.hpp"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only lines meant for scripts (the ready line).
  dorm::log::configure(dorm::log::LogFormat::text, spdlog::level::info);

  CLI::App app{"dorm: a durable-object actor runtime and MCP server", "dorm"};
  // Options of the program itself may also follow the subcommand: dorm serve --log-format json.
  app.fallthrough();
  std::string log_format = "text";
  std::string log_level = "info";
  app.add_option("--log-format", log_format, "Log lines as json (one object per line) or text")
      ->capture_default_str()
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--log-level", log_level, "Lowest level logged")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.set_version_flag("--version", std::string("dorm ") + dorm::kVersion);
  app.require_subcommand(1);

  dorm::tools::ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "Serve MCP sessions over Streamable HTTP");
  serve_cmd->add_option("--listen", serve.listen, "Address to listen on, HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  serve_cmd->add_option("--storage", serve.storage, "Storage URI")->capture_default_str();
  serve_cmd->add_option("--auth-tokens", serve.auth_tokens,
                        "JSON token file [{\"sha256\": hex, \"user\": ..., \"org\": ...}]; reloaded on SIGHUP")
      ->check(CLI::ExistingFile);
  serve_cmd->add_option("--allowed-origins", serve.allowed_origins,
                        "Origins allowed besides loopback ones (comma-separated scheme://host[:port])")
      ->delimiter(',');
  serve_cmd->add_option("--allowed-hosts", serve.allowed_hosts,
                        "Host header values allowed besides loopback ones (comma-separated host[:port])")
      ->delimiter(',');
  double lock_wait_s = 10;
  serve_cmd->add_option("--lock-wait", lock_wait_s, "Seconds to wait for another process's storage lock")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  serve_cmd->add_option("--fixtures", serve.fixtures, "Fixture tool sets to offer (comma-separated): testing, conformance")
      ->delimiter(',');
  serve_cmd->add_option("--tools-page-size", serve.tools_page_size, "Tools per tools/list page")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000));
  serve_cmd
      ->add_option("--session-ttl", serve.session_ttl_s,
                   "Delete a session idle this long (a number with unit s, m, h or d; plain: seconds)")
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, std::int64_t>{
                                            {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}},
                                        CLI::AsNumberWithUnit::UNIT_OPTIONAL, "DURATION"))
      ->check(CLI::Range(std::int64_t{60}, std::int64_t{10LL * 365 * 86400}))
      ->default_str("7d");
  serve_cmd->add_option("--retry-ms", serve.retry_ms,
                        "The retry hint of priming events: how long a client waits before resuming")
      ->capture_default_str()
      ->check(CLI::Range(1, 60'000));
  serve_cmd->add_option("--trace-file", serve.trace_file,
                        "Append finished spans to this file as OTLP JSON lines");
  serve_cmd->add_option("--http-threads", serve.http_threads, "HTTP I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  serve_cmd->add_flag("--code-mode", serve.code_mode,
                      "Offer the execute and resume tools: model-written JavaScript run against the tools in "
                      "sandboxed V8 worker processes (docs/code-mode.md)");
  serve_cmd->add_option("--engine-workers", serve.engine_workers, "Engine worker processes for --code-mode (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  serve_cmd->add_option("--engine-slots", serve.engine_slots, "Executions each engine worker runs at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  serve_cmd
      ->add_option("--approval-timeout", serve.approval_timeout_ms,
                   "How long a paused execution waits for resume before its approval is declined (a number "
                   "with unit ms, s or m; plain: milliseconds)")
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, std::int64_t>{{"ms", 1}, {"s", 1000}, {"m", 60'000}},
                                        CLI::AsNumberWithUnit::UNIT_OPTIONAL, "DURATION"))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{24LL * 3600 * 1000}))
      ->default_str("4m");
  serve_cmd
      ->add_option("--warm-window", serve.warm_window_ms,
                   "How long a paused execution keeps its isolate, so a prompt resume skips the replay (a "
                   "number with unit ms, s or m; plain: milliseconds; 0: drop it at once)")
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, std::int64_t>{{"ms", 1}, {"s", 1000}, {"m", 60'000}},
                                        CLI::AsNumberWithUnit::UNIT_OPTIONAL, "DURATION"))
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{3600LL * 1000}))
      ->default_str("30s");
  serve_cmd->add_flag("!--no-reap-at-boot", serve.reap_at_boot,
                      "Do not wake the sessions with calls in flight before turning ready (each "
                      "then reaps when it is next used)");
  // Development switches: an empty group hides them from --help.
  serve_cmd->add_flag("!--no-reaper", serve.reaper, "Leave requests killed by a restart unanswered")
      ->group("");
  serve_cmd->add_flag("!--no-priming", serve.priming, "Send no priming events")->group("");

  dorm::tools::InspectOptions inspect;
  auto* inspect_cmd = app.add_subcommand(
      "inspect", "Show what a store holds, read-only: safe while dorm serve runs on it");
  inspect_cmd->add_option("--storage", inspect.storage, "Storage URI of an existing store")
      ->required();
  inspect_cmd->add_flag("--json", inspect.json, "One JSON document instead of text");
  inspect_cmd->add_option("--session", inspect.session,
                          "Show this session only (its object id or MCP session id), or all");
  inspect_cmd->add_option("--limit", inspect.limit,
                          "Sessions, alarms and index entries listed (0: no limit)")
      ->capture_default_str();
  inspect_cmd->add_option("--events", inspect.events, "Newest events shown per stream (0: all)")
      ->capture_default_str();

  auto* bench_cmd = app.add_subcommand("bench", "Benchmarks (release builds configured with -Dbench=true)");
  bench_cmd->require_subcommand(1);
#ifdef DORM_WITH_BENCH
  dorm::bench::StorageBenchOptions storage_bench;
  auto* bench_storage = bench_cmd->add_subcommand(
      "storage", "The storage layer against raw RocksDB (and SQLite, memory alongside)");
  bench_storage->add_option("--dir", storage_bench.dir, "Directory for the databases (default: a temporary one)");
  bench_storage->add_option("--rounds", storage_bench.rounds, "Interleaved rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  bench_storage->add_option("--ops", storage_bench.ops, "Operations per row, subject and round")
      ->capture_default_str()
      ->check(CLI::Range(100, 10'000'000));
  bench_storage->add_flag("!--no-fsync", storage_bench.fsync_rows, "Skip the fsync rows");
  bench_storage->add_flag("!--no-open-after-kill", storage_bench.open_after_kill,
                          "Skip the open-after-SIGKILL measurement");
  dorm::bench::EvictionBenchOptions eviction_bench;
  auto* bench_eviction = bench_cmd->add_subcommand(
      "eviction", "Resident memory with a resident budget, before and after evicting");
  bench_eviction->add_option("--objects", eviction_bench.objects, "Objects to touch")->capture_default_str();
  bench_eviction->add_option("--budget", eviction_bench.budget, "Resident budget")->capture_default_str();
  bench_eviction->add_option("--in-flight", eviction_bench.in_flight, "Requests outstanding at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  bench_eviction->add_option("--rounds", eviction_bench.rounds, "Rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  dorm::bench::RuntimeBenchOptions runtime_bench;
  auto* bench_runtime = bench_cmd->add_subcommand(
      "runtime", "The runtime against bare CAF: round trips, idle memory, cold activation, alarms");
  bench_runtime->add_option("--dir", runtime_bench.dir, "Directory for the databases (default: a temporary one)");
  bench_runtime->add_option("--rounds", runtime_bench.rounds, "Rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  bench_runtime->add_option("--workers", runtime_bench.workers, "CAF worker threads, dorm and bare CAF alike")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  bench_runtime->add_option("--in-flight", runtime_bench.in_flight, "Requests outstanding at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench_runtime->add_option("--requests", runtime_bench.requests, "Round trips per row, subject and round")
      ->capture_default_str()
      ->check(CLI::Range(1000, 100'000'000));
  bench_runtime->add_option("--idle-objects", runtime_bench.idle_objects, "Idle resident objects (memory)")
      ->capture_default_str()
      ->check(CLI::Range(1000, 10'000'000));
  bench_runtime->add_option("--cold-objects", runtime_bench.cold_objects, "Objects on disk (cold activation)")
      ->capture_default_str()
      ->check(CLI::Range(100, 100'000'000));
  bench_runtime->add_option("--cold-sample", runtime_bench.cold_sample, "Cold activations per round")
      ->capture_default_str()
      ->check(CLI::Range(100, 100'000'000));
  bench_runtime->add_option("--alarms", runtime_bench.alarms, "Pending alarms (a multiple of 100)")
      ->capture_default_str()
      ->check(CLI::Range(100, 100'000'000));
  bench_runtime->add_option("--alarm-rate", runtime_bench.alarm_rate, "Alarms per second coming due while measuring")
      ->capture_default_str()
      ->check(CLI::Range(100, 1'000'000));
  bench_runtime->add_option("--alarm-window", runtime_bench.alarm_window_s, "Seconds over which they come due")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  bench_runtime->add_option("--part", runtime_bench.parts, "Run only this part (repeatable; default: all)")
      ->check(CLI::IsMember({"round-trips", "memory", "activation", "alarms"}));
  dorm::bench::BootBenchOptions boot_bench;
  auto* bench_boot = bench_cmd->add_subcommand(
      "boot", "dorm serve from exec to bind and to ready, over stored sessions with calls killed in flight");
  bench_boot->add_option("--dir", boot_bench.dir,
                         "Directory for the stores (default: a temporary one); a store prepared "
                         "there with the same sizes is reused");
  bench_boot->add_option("--rounds", boot_bench.rounds, "Boots per subject (median and max over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  bench_boot->add_option("--sessions", boot_bench.sessions, "Sessions stored")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  bench_boot->add_option("--in-flight", boot_bench.in_flight, "Of which this many hold a call killed in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  bench_boot->add_option("--wait", boot_bench.wait_s, "Seconds to wait for each boot to turn ready")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  std::string fill_dir;
  auto* bench_fill = bench_cmd->add_subcommand("storage-fill", "");  // internal helper
  bench_fill->group("");  // hidden from --help
  bench_fill->add_option("dir", fill_dir)->required();
#endif

#ifdef DORM_WITH_BENCH
  dorm::bench::EngineBenchOptions engine_bench;
  auto* bench_engine = bench_cmd->add_subcommand(
      "engine", "The engine pool against bare V8 and the original system's QuickJS engine shape");
  bench_engine->add_option("--rounds", engine_bench.rounds, "Interleaved rounds (median over them)")
      ->capture_default_str();
  bench_engine->add_option("--runs", engine_bench.trivial_runs, "Trivial executions per subject and round")
      ->capture_default_str();
  bench_engine->add_option("--tool-runs", engine_bench.tool_runs, "100-tool-call executions per round")
      ->capture_default_str();
  bench_engine->add_option("--quickjs-dir", engine_bench.quickjs_dir,
                           "A copy of ../shared/peers/quickjs-engine with `npm install` done (omit to skip it)");
  bench_engine->add_option("--worker", engine_bench.worker_path, "The dorm-engine-worker executable");
  dorm::bench::ExecuteBenchOptions execute_bench;
  auto* bench_execute = bench_cmd->add_subcommand(
      "execute", "Code mode in a session: execute against tools/call, paused-execution memory, resume from cold");
  bench_execute->add_option("--dir", execute_bench.dir, "Directory for the database (default: a temporary one)");
  bench_execute->add_option("--rounds", execute_bench.rounds, "Interleaved rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  bench_execute->add_option("--calls", execute_bench.calls,
                            "Sequential calls per subject and round (round trips; resumes and live baseline)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  bench_execute->add_option("--paused", execute_bench.paused, "Paused executions held at once (memory)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
#endif

  CLI11_PARSE(app, argc, argv);
  // Both were checked against the same lists by CLI11 above.
  dorm::log::configure(*dorm::log::parse_format(log_format), *dorm::log::parse_level(log_level));

  if (inspect_cmd->parsed()) return dorm::tools::inspect(inspect);
  if (serve_cmd->parsed()) {
    serve.lock_wait = std::chrono::milliseconds(static_cast<long>(lock_wait_s * 1000));
    return dorm::tools::serve(serve);
  }
#ifdef DORM_WITH_BENCH
  try {
    if (bench_storage->parsed()) return dorm::bench::run_storage_bench(storage_bench);
    if (bench_fill->parsed()) return dorm::bench::storage_bench_fill_and_wait(fill_dir);
    if (bench_eviction->parsed()) return dorm::bench::run_eviction_bench(eviction_bench);
    if (bench_runtime->parsed()) return dorm::bench::run_runtime_bench(runtime_bench);
    if (bench_boot->parsed()) return dorm::bench::run_boot_bench(boot_bench);
    if (bench_engine->parsed()) return dorm::bench::run_engine_bench(engine_bench);
    if (bench_execute->parsed()) return dorm::bench::run_execute_bench(execute_bench);
  } catch (const std::exception& e) {
    dorm::log::error("benchmark_failed", {{"error", e.what()}});
    return 1;
  }
#else
  if (bench_cmd->parsed()) {
    dorm::log::error("benchmarks_not_built",
                     {{"hint", "configure a release build with -Dbench=true"}});
    return 1;
  }
#endif
  return 0;
}
