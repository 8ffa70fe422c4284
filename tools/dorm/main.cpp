// dorm — the command-line program: serve, inspect, backup, restore, deploy-sim, torture, bench.
//
// Each subcommand is one function that adds its own options to the parser and returns how
// to run it once parsed; main() lists them in the order --help shows them.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "backup.hpp"
#include "deploy_sim/deploy_sim.hpp"
#include "dorm/runtime/log.hpp"
#include "inspect.hpp"
#include "serve.hpp"
#include "settings.hpp"
#include "torture/torture.hpp"
#ifdef DORM_WITH_BENCH
#include "bench/bare_http_server.hpp"
#include "bench/boot_bench.hpp"
#include "bench/engine_bench.hpp"
#include "bench/eviction_bench.hpp"
#include "bench/execute_bench.hpp"
#include "bench/mcp_bench.hpp"
#include "bench/runtime_bench.hpp"
#include "bench/storage_bench.hpp"
#include "bench/streams_bench.hpp"
#endif
#include "build_info.hpp"

namespace {

// A subcommand added to the parser, and what runs it (returning the exit status) once
// the command line chose it.
struct Subcommand {
  CLI::App* command;
  std::function<int()> run;
};
using Subcommands = std::vector<Subcommand>;

struct LogChoice {
  std::string format = "text";
  std::string level = "info";
};

// Options of the program itself; they may also follow the subcommand: dorm serve --log-format json.
void add_program_options(CLI::App& app, LogChoice& log) {
  app.fallthrough();
  app.add_option("--log-format", log.format, "Log lines as json (one object per line) or text")
      ->capture_default_str()
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--log-level", log.level, "Lowest level logged")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.set_version_flag("--version", dorm::tools::version_text(),
                       "Print dorm's version and commit, and its libraries' versions");
  app.require_subcommand(1);
}

// A duration option's transform: a number with one of `units`, or a plain number of the first.
CLI::AsNumberWithUnit duration_with_units(std::map<std::string, std::int64_t> units) {
  return CLI::AsNumberWithUnit(std::move(units), CLI::AsNumberWithUnit::UNIT_OPTIONAL, "DURATION");
}

struct ServeCommandLine {
  dorm::tools::ServeOptions serve;
  // Given in seconds; ServeOptions holds milliseconds.
  double lock_wait_s = 45;
  double drain_timeout_s = 30;
  double shutdown_grace_s = 5;
};

// Who may call: the authentication mode and OAuth's settings (docs/auth.md).
void add_serve_oauth_options(CLI::App& cmd, dorm::tools::ServeOptions& serve) {
  cmd.add_option("--auth", serve.auth,
                 "tokens (--auth-tokens FILE), oauth (access tokens of --oauth-issuer) or none "
                 "(one local user; loopback --listen only). Default: tokens with "
                 "--auth-tokens, else none")
      ->check(CLI::IsMember({"tokens", "oauth", "none"}));
  cmd.add_option("--oauth-issuer", serve.oauth_issuers,
                 "An OAuth authorization server's issuer URL, whose metadata names its keys; "
                 "repeat it to trust several (a token's iss picks whose keys verify it)")
      ->take_all();
  cmd.add_option("--oauth-audience", serve.oauth_audience,
                 "This server's resource URI, which every token's aud must contain "
                 "(default http://<bound address>/mcp)");
  cmd.add_option("--oauth-scopes", serve.oauth_scopes,
                 "Scopes every token must grant (comma-separated)")
      ->delimiter(',');
  cmd.add_option("--oauth-min-key-refresh", serve.oauth_min_key_refresh_ms,
                 "Milliseconds between JWKS fetches caused by unknown key ids")
      ->capture_default_str()
      ->check(CLI::Range(0, 86'400'000));
  cmd.add_flag("--oauth-accept-plain-jwt", serve.oauth_accept_plain_jwt,
               "Also accept access tokens whose typ is JWT or absent (Keycloak, Microsoft "
               "Entra) rather than only RFC 9068's at+jwt; aud still has to name this server");
  cmd.add_option("--oauth-ca-file", serve.oauth_ca_file,
                 "PEM file of the CAs the authorization servers' https certificates must chain "
                 "to, instead of the system's trust store")
      ->check(CLI::ExistingFile);
  cmd.add_option("--oauth-introspection-url", serve.oauth_introspection_url,
                 "The authorization server's token introspection endpoint (RFC 7662): opaque "
                 "(non-JWT) access tokens are checked there; without it they are refused");
  cmd.add_option("--oauth-client-id", serve.oauth_client_id,
                 "dorm's client id at the authorization server, for introspection");
  cmd.add_option("--oauth-client-secret-file", serve.oauth_client_secret_file,
                 "File holding dorm's client secret at the authorization server, for introspection")
      ->check(CLI::ExistingFile);
  cmd.add_option("--oauth-introspection-cache-ttl", serve.oauth_introspection_cache_ttl_s,
                 "Seconds an introspection answer is trusted (an active token's never past its "
                 "exp); a token revoked at the authorization server is refused after at most "
                 "this long. 0 asks on every request")
      ->capture_default_str()
      ->check(CLI::Range(0, 86'400));
  cmd.add_flag("--oauth-allow-http", serve.oauth_allow_http,
               "Fetch the authorization server's metadata and keys over plain http:// from "
               "hosts that are not loopback (loopback is always allowed)");
}

// Where dorm serve listens, what it stores, who may call and what it offers.
void add_serve_server_options(CLI::App& cmd, ServeCommandLine& line) {
  auto& serve = line.serve;
  cmd.add_option("--listen", serve.listen,
                 "Address to listen on, HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  cmd.add_option("--storage", serve.storage, "Storage URI")->capture_default_str();
  cmd.add_option(
         "--auth-tokens", serve.auth_tokens,
         "JSON token file [{\"sha256\": hex, \"user\": ..., \"org\": ...}]; reloaded on SIGHUP")
      ->check(CLI::ExistingFile);
  cmd.add_option("--metrics-tokens", serve.metrics_tokens,
                 "Token file (the --auth-tokens format) whose tokens may read GET /metrics "
                 "from another machine; without it only loopback callers may. Reloaded on "
                 "SIGHUP")
      ->check(CLI::ExistingFile);
  add_serve_oauth_options(cmd, serve);
  cmd.add_option("--allowed-origins", serve.allowed_origins,
                 "Origins allowed besides loopback ones (comma-separated scheme://host[:port])")
      ->delimiter(',');
  cmd.add_option("--allowed-hosts", serve.allowed_hosts,
                 "Host header values allowed besides loopback ones (comma-separated host[:port])")
      ->delimiter(',');
  cmd.add_option("--lock-wait", line.lock_wait_s,
                 "Seconds to wait for another process's storage lock")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd.add_option("--drain-timeout", line.drain_timeout_s,
                 "At SIGTERM, seconds running calls may take to finish before they are "
                 "answered with a server_draining error (0: at once; a second SIGTERM cuts "
                 "it short)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd.add_option("--shutdown-grace", line.shutdown_grace_s,
                 "Seconds the stop may take after the drain before the process exits regardless")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd.add_option("--max-connections", serve.max_connections,
                 "Open HTTP connections at most, streams included; one more is answered 503 "
                 "with Retry-After and closed (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1'000'000));
  cmd.add_flag("--reuse-port", serve.reuse_port,
               "Bind with SO_REUSEPORT, so a successor can bind the same port while this "
               "server drains (rolling deploys)");
  cmd.add_option("--fixtures", serve.fixtures,
                 "Fixture tool sets to offer (comma-separated): testing, conformance")
      ->delimiter(',');
  cmd.add_option("--tools-page-size", serve.tools_page_size, "Tools per tools/list page")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000));
  cmd.add_option(
         "--session-ttl", serve.session_ttl_s,
         "Delete a session idle this long (a number with unit s, m, h or d; plain: seconds)")
      ->transform(duration_with_units({{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}}))
      ->check(CLI::Range(std::int64_t{60}, std::int64_t{10LL * 365 * 86400}))
      ->default_str("7d");
  cmd.add_option("--retry-ms", serve.retry_ms,
                 "The retry hint of priming events: how long a client waits before resuming")
      ->capture_default_str()
      ->check(CLI::Range(1, 60'000));
  cmd.add_option("--node-id", serve.node_id,
                 "Serve the store as this node of several (scale-out: a postgres:// store "
                 "opened with shared=true; docs/scale-out.md)");
  cmd.add_option("--advertise", serve.advertise,
                 "The URL other nodes reach this node's /mcp at (default: where it listens)")
      ->needs("--node-id");
  cmd.add_option("--lease-ms", serve.lease_ms,
                 "How long a node's lease of a session lasts unless renewed")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{200}, std::int64_t{600'000}))
      ->needs("--node-id");
  cmd.add_option("--lease-renew-ms", serve.lease_renew_ms,
                 "How often a node renews its leases and announces itself (less than --lease-ms)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{50}, std::int64_t{300'000}))
      ->needs("--node-id");
  cmd.add_option("--forward-timeout-ms", serve.forward_timeout_ms,
                 "How long a request forwarded to the node serving its session may wait for "
                 "that node's answer to begin")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{100}, std::int64_t{3'600'000}))
      ->needs("--node-id");
  cmd.add_option("--trace-file", serve.trace_file,
                 "Append finished spans to this file as OTLP JSON lines");
  cmd.add_option("--http-threads", serve.http_threads, "HTTP I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
}

// Code mode: the engine pool and how long paused executions wait.
void add_serve_code_mode_options(CLI::App& cmd, dorm::tools::ServeOptions& serve) {
  cmd.add_flag("--modern-era", serve.modern_era,
               "Also serve MCP 2026-07-28 (stateless requests, server/discover, input_required) "
               "beside 2025-11-25 on the same endpoint (docs/mcp.md)");
  cmd.add_flag(
      "--code-mode", serve.code_mode,
      "Offer the execute and resume tools: model-written JavaScript run against the tools in "
      "sandboxed V8 worker processes (docs/code-mode.md)");
  cmd.add_option("--engine-workers", serve.engine_workers,
                 "Engine worker processes for --code-mode (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  cmd.add_option("--engine-slots", serve.engine_slots, "Executions each engine worker runs at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd.add_option(
         "--engine-poll-us", serve.engine_poll_us,
         "While one execution runs, how long the engine polls for its next tool result or "
         "frame before it sleeps, in microseconds: spends up to that much CPU per tool call "
         "to save two thread wake-ups (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0L, static_cast<long>(dorm::engine::PollBeforeSleep::kMaxBudget.count())));
  cmd.add_option("--engine-start-poll-us", serve.engine_start_poll_us,
                 "When an execution starts while no other is active, how long the starting request "
                 "waits for its outcome before going on, in microseconds (spinning if a core is "
                 "spare): holds that request's thread up to that long so that quick code answers "
                 "in the same turn (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0L, static_cast<long>(dorm::engine::PollBeforeSleep::kMaxBudget.count())));
  cmd.add_option(
         "--approval-timeout", serve.approval_timeout_ms,
         "How long a paused execution waits for resume before its approval is declined (a number "
         "with unit ms, s or m; plain: milliseconds)")
      ->transform(duration_with_units({{"ms", 1}, {"s", 1000}, {"m", 60'000}}))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{24LL * 3600 * 1000}))
      ->default_str("4m");
  cmd.add_option(
         "--warm-window", serve.warm_window_ms,
         "How long a paused execution keeps its isolate, so a prompt resume skips the replay (a "
         "number with unit ms, s or m; plain: milliseconds; 0: drop it at once)")
      ->transform(duration_with_units({{"ms", 1}, {"s", 1000}, {"m", 60'000}}))
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{3600LL * 1000}))
      ->default_str("30s");
}

Subcommand add_serve(CLI::App& app) {
  auto line = std::make_shared<ServeCommandLine>();
  auto* cmd = app.add_subcommand("serve", "Serve MCP sessions over Streamable HTTP");
  add_serve_server_options(*cmd, *line);
  add_serve_code_mode_options(*cmd, line->serve);
  cmd->add_flag("!--no-reap-at-boot", line->serve.reap_at_boot,
                "Do not wake the sessions with calls in flight before turning ready (each "
                "then reaps when it is next used)");
  // Development switches: an empty group hides them from --help.
  cmd->add_flag("!--no-reaper", line->serve.reaper, "Leave requests killed by a restart unanswered")
      ->group("");
  cmd->add_flag("!--no-priming", line->serve.priming, "Send no priming events")->group("");
  cmd->footer(
      "Every option may also come from the environment, as DORM_ and its name in upper case "
      "(--lock-wait: DORM_LOCK_WAIT), or from the TOML file of --config (lock-wait = 10). "
      "The command line wins over the environment, which wins over the file. "
      "docs/operations.md#configuration");
  return {cmd, [line] {
            auto ms = [](double seconds) {
              return std::chrono::milliseconds(static_cast<long>(seconds * 1000));
            };
            line->serve.lock_wait = ms(line->lock_wait_s);
            line->serve.drain_timeout = ms(line->drain_timeout_s);
            line->serve.shutdown_grace = ms(line->shutdown_grace_s);
            return dorm::tools::serve(line->serve);
          }};
}

Subcommand add_inspect(CLI::App& app) {
  auto inspect = std::make_shared<dorm::tools::InspectOptions>();
  auto* cmd = app.add_subcommand(
      "inspect", "Show what a store holds, read-only: safe while dorm serve runs on it");
  cmd->add_option("--storage", inspect->storage, "Storage URI of an existing store")->required();
  cmd->add_flag("--json", inspect->json, "One JSON document instead of text");
  cmd->add_option("--session", inspect->session,
                  "Show this session only (its object id or MCP session id), or all");
  cmd->add_option("--limit", inspect->limit,
                  "Sessions, alarms and index entries listed (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--events", inspect->events, "Newest events shown per stream (0: all)")
      ->capture_default_str();
  return {cmd, [inspect] { return dorm::tools::inspect(*inspect); }};
}

// What the simulation runs: which server, deployed how, under how much traffic.
void add_deploy_sim_workload_options(CLI::App& cmd, dorm::deploy_sim::DeploySimOptions& o) {
  cmd.add_option("--variant", o.variant,
                 "Server: no-fix (--no-priming --no-reaper), priming-only (--no-reaper), "
                 "reaper, or all three")
      ->capture_default_str()
      ->check(CLI::IsMember({"no-fix", "priming-only", "reaper", "all"}));
  cmd.add_option("--mode", o.mode,
                 "Deploy: kill (SIGKILL, then the successor), term (SIGTERM: drain), rolling "
                 "(successor bound with --reuse-port before the SIGTERM), or all three")
      ->capture_default_str()
      ->check(CLI::IsMember({"kill", "term", "rolling", "all"}));
  cmd.add_option("--sessions", o.sessions, "Client sessions")
      ->capture_default_str()
      ->check(CLI::Range(1, 2000));
  cmd.add_option("--calls-per-session", o.calls_per_session, "Calls each session keeps in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 50));
  cmd.add_option("--deploys", o.deploys, "Deploys (each in the middle of a round of calls)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd.add_option("--call-ms", o.call_ms,
                 "How long each call's tool runs: MIN-MAX milliseconds, drawn uniformly")
      ->capture_default_str()
      ->check([](const std::string& text) {
        auto range = dorm::deploy_sim::parse_call_ms(text);
        return range ? std::string() : range.error().message;
      });
  cmd.add_option("--seed", o.seed, "Seed of the workload: the same seed draws the same calls")
      ->capture_default_str();
}

Subcommand add_deploy_sim(CLI::App& app) {
  auto o = std::make_shared<dorm::deploy_sim::DeploySimOptions>();
  auto* cmd = app.add_subcommand(
      "deploy-sim",
      "Deploy a real dorm serve under simulated SDK clients and count what every call saw; "
      "with --virtual, the same in-process on virtual time (docs/deploy-sim.md)");
  add_deploy_sim_workload_options(*cmd, *o);
  cmd->add_option("--client-timeout", o->client_timeout_s,
                  "Seconds a client waits for a call's outcome before it counts as hung")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--drain-timeout", o->drain_timeout_s,
                  "The servers' --drain-timeout in term and rolling modes, seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--restart-gap", o->restart_gap_ms,
                  "Milliseconds from the kill or SIGTERM to the successor's start; a row for "
                  "each of a comma-separated list (kill and term modes)")
      ->delimiter(',')
      ->default_str("0")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{600'000}));
  cmd->add_option("--retry-ms", o->retry_ms,
                  "The servers' --retry-ms (the priming event's retry hint); a row for each of a "
                  "comma-separated list")
      ->delimiter(',')
      ->default_str("500")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{60'000}));
  cmd->add_option("--format", o->format, "The table as aligned text, json or markdown")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd->add_option("--svg", o->svg, "Also write the timeline of every call to this SVG file");
  auto* server_binary =
      cmd->add_option("--dorm", o->dorm, "The dorm binary that serves (default: this program)")
          ->check(CLI::ExistingFile);
  cmd->add_flag("--virtual", o->virtual_time,
                "Run the same rows in this process on virtual time (McpCluster): no processes, "
                "no sockets, no HTTP; the same table, its unanswered column empty")
      ->excludes(server_binary);
  cmd->add_option("--storage", o->storage,
                  "A postgres:// URI: the servers keep the rows' store in its table "
                  "dorm_deploy_sim, emptied before each row (default: RocksDB in a temporary "
                  "directory)");
  cmd->add_option("--nodes", o->nodes,
                  "Run this many dorm serve nodes over --storage, each session's client on one "
                  "of them; rolling replaces every node in turn, kill and term hit one per deploy")
      ->capture_default_str()
      ->check(CLI::Range(1, 9));
  cmd->add_option("--lease-ms", o->lease_ms,
                  "The nodes' --lease-ms (renewed every quarter of it; default: dorm serve's)")
      ->check(CLI::Range(std::int64_t{1000}, std::int64_t{600'000}));
  return {cmd, [o] { return dorm::deploy_sim::run_deploy_sim(*o); }};
}

Subcommand add_torture(CLI::App& app) {
  auto o = std::make_shared<dorm::torture::TortureOptions>();
  auto* cmd = app.add_subcommand(
      "torture",
      "SIGKILL a real dorm serve at seeded moments under concurrent sessions, restart it on the "
      "same store, and check that no acknowledged write is lost or doubled, no call hangs and "
      "no session is lost (docs/reliability.md)");
  cmd->add_option("--cycles", o->cycles, "Kills, each followed by a restart and the checks")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  cmd->add_option("--sessions", o->sessions, "Concurrent sessions (new ones are opened on top)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", o->seed, "Seed of the workload and the kill moments")
      ->capture_default_str();
  cmd->add_option("--dorm", o->dorm, "The dorm binary that serves (default: this program)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--storage", o->storage,
                  "The servers' store, a storage URI where {dir} stands for a fresh temporary "
                  "directory (rocksdb:{dir}/store, sqlite:{dir}/store.db)")
      ->capture_default_str()
      ->check([](const std::string& text) {
        auto uri = dorm::torture::storage_uri_for(text, "/tmp/dir");
        return uri ? std::string() : uri.error().message;
      });
  cmd->add_option("--format", o->format, "The report as an aligned table (text) or one JSON object")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--retry-ms", o->retry_ms,
                  "The servers' --retry-ms: R, the clients' reconnect delay; a call hit by a kill "
                  "must end within R + 2 s of the restart")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{50}, std::int64_t{10'000}));
  cmd->add_option("--time-limit", o->time_limit_s,
                  "Seconds after which the run stops at the end of a cycle (and fails)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86'400.0));
  return {cmd, [o] { return dorm::torture::run_torture(*o); }};
}

#ifdef DORM_WITH_BENCH
// A benchmark that throws fails with the reason logged, not with std::terminate.
template <class Options, class Run>
Subcommand bench_subcommand(CLI::App* cmd, std::shared_ptr<Options> options, Run run) {
  return {cmd, [options, run] {
            try {
              return run(*options);
            } catch (const std::exception& e) {
              dorm::log::error("benchmark_failed", {{"error", e.what()}});
              return 1;
            }
          }};
}

Subcommand add_bench_storage(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::StorageBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "storage", "The storage layer against raw RocksDB (and SQLite, memory alongside)");
  cmd->add_option("--dir", options->dir, "Directory for the databases (default: a temporary one)");
  cmd->add_option("--rounds", options->rounds, "Interleaved rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--ops", options->ops, "Operations per row, subject and round")
      ->capture_default_str()
      ->check(CLI::Range(100, 10'000'000));
  cmd->add_flag("!--no-fsync", options->fsync_rows, "Skip the fsync rows");
  cmd->add_flag("!--no-open-after-kill", options->open_after_kill,
                "Skip the open-after-SIGKILL measurement");
  cmd->add_flag("!--no-backends", options->backend_rows,
                "Skip the backends table (only the RocksDB settings table)");
  cmd->add_flag("!--no-settings", options->settings_rows, "Skip the RocksDB settings table");
  cmd->add_option("--postgres", options->postgres,
                  "Also a PostgreSQL table: dorm's postgres backend against plain libpq, on "
                  "the database this postgres:// URI names (tables dorm_bench_raw, "
                  "dorm_bench_dorm are replaced)");
  return bench_subcommand(cmd, options, dorm::bench::run_storage_bench);
}

Subcommand add_bench_eviction(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::EvictionBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "eviction", "Resident memory with a resident budget, before and after evicting");
  cmd->add_option("--objects", options->objects, "Objects to touch")->capture_default_str();
  cmd->add_option("--budget", options->budget, "Resident budget")->capture_default_str();
  cmd->add_option("--in-flight", options->in_flight, "Requests outstanding at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  cmd->add_option("--rounds", options->rounds, "Rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  return bench_subcommand(cmd, options, dorm::bench::run_eviction_bench);
}

// Round trips and idle memory; the cold activation and alarm options follow.
void add_bench_runtime_load_options(CLI::App& cmd, dorm::bench::RuntimeBenchOptions& options) {
  cmd.add_option("--dir", options.dir, "Directory for the databases (default: a temporary one)");
  cmd.add_option("--rounds", options.rounds, "Rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd.add_option("--workers", options.workers, "CAF worker threads, dorm and bare CAF alike")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd.add_option("--in-flight", options.in_flight, "Requests outstanding at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--requests", options.requests, "Round trips per row, subject and round")
      ->capture_default_str()
      ->check(CLI::Range(1000, 100'000'000));
  cmd.add_option("--idle-objects", options.idle_objects, "Idle resident objects (memory)")
      ->capture_default_str()
      ->check(CLI::Range(1000, 10'000'000));
  cmd.add_option("--idle-sessions", options.idle_sessions, "Idle resident MCP sessions (sessions)")
      ->capture_default_str()
      ->check(CLI::Range(1000, 10'000'000));
  cmd.add_option("--storage-cache-bytes", options.storage_cache_bytes,
                 "Storage cache bound of the idle objects (memory; 0 = no cache)")
      ->capture_default_str();
}

Subcommand add_bench_runtime(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::RuntimeBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "runtime", "The runtime against bare CAF: round trips, idle memory, cold activation, alarms");
  add_bench_runtime_load_options(*cmd, *options);
  cmd->add_option("--cold-objects", options->cold_objects, "Objects on disk (cold activation)")
      ->capture_default_str()
      ->check(CLI::Range(100, 100'000'000));
  cmd->add_option("--cold-sample", options->cold_sample, "Cold activations per round")
      ->capture_default_str()
      ->check(CLI::Range(100, 100'000'000));
  cmd->add_option("--alarms", options->alarms, "Pending alarms (a multiple of 100)")
      ->capture_default_str()
      ->check(CLI::Range(100, 100'000'000));
  cmd->add_option("--alarm-rate", options->alarm_rate,
                  "Alarms per second coming due while measuring")
      ->capture_default_str()
      ->check(CLI::Range(100, 1'000'000));
  cmd->add_option("--alarm-window", options->alarm_window_s, "Seconds over which they come due")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  cmd->add_option("--part", options->parts, "Run only this part (repeatable; default: all)")
      ->check(CLI::IsMember(
          {"round-trips", "memory", "sessions", "activation", "alarms", "storage-cache", "rearms"}));
  return bench_subcommand(cmd, options, dorm::bench::run_runtime_bench);
}

Subcommand add_bench_boot(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::BootBenchOptions>();
  auto* cmd = bench.add_subcommand("boot",
                                   "dorm serve from exec to bind and to ready, over stored "
                                   "sessions with calls killed in flight");
  cmd->add_option("--dir", options->dir,
                  "Directory for the stores (default: a temporary one); a store prepared "
                  "there with the same sizes is reused");
  cmd->add_option("--rounds", options->rounds, "Boots per subject (median and max over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--sessions", options->sessions, "Sessions stored")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  cmd->add_option("--in-flight", options->in_flight,
                  "Of which this many hold a call killed in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  cmd->add_option("--wait", options->wait_s, "Seconds to wait for each boot to turn ready")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  return bench_subcommand(cmd, options, dorm::bench::run_boot_bench);
}

// An internal helper of the storage benchmark, hidden from --help.
Subcommand add_bench_storage_fill(CLI::App& bench) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = bench.add_subcommand("storage-fill", "");
  cmd->group("");
  cmd->add_option("dir", *dir)->required();
  return bench_subcommand(cmd, dir, dorm::bench::storage_bench_fill_and_wait);
}

// The child process of `dorm bench runtime --part sessions`, hidden from --help.
Subcommand add_bench_session_memory(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::RuntimeBenchOptions>();
  auto* cmd = bench.add_subcommand("session-memory", "");
  cmd->group("");
  add_bench_runtime_load_options(*cmd, *options);
  return bench_subcommand(cmd, options, dorm::bench::run_session_memory_child);
}

Subcommand add_bench_engine(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::EngineBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "engine", "The engine pool against bare V8 and the original system's QuickJS engine shape");
  cmd->add_option("--rounds", options->rounds, "Interleaved rounds (median over them)")
      ->capture_default_str();
  cmd->add_option("--runs", options->trivial_runs, "Trivial executions per subject and round")
      ->capture_default_str();
  cmd->add_option("--tool-runs", options->tool_runs, "100-tool-call executions per round")
      ->capture_default_str();
  cmd->add_option(
      "--quickjs-dir", options->quickjs_dir,
      "A copy of ../shared/peers/quickjs-engine with `npm install` done (omit to skip it)");
  cmd->add_option("--worker", options->worker_path, "The dorm-engine-worker executable");
  return bench_subcommand(cmd, options, dorm::bench::run_engine_bench);
}

Subcommand add_bench_execute(CLI::App& bench) {
  auto options = std::make_shared<dorm::bench::ExecuteBenchOptions>();
  auto* cmd = bench.add_subcommand("execute",
                                   "Code mode in a session: execute against tools/call, "
                                   "paused-execution memory, resume from cold");
  cmd->add_option("--dir", options->dir, "Directory for the database (default: a temporary one)");
  cmd->add_option("--rounds", options->rounds, "Interleaved rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--calls", options->calls,
                  "Sequential calls per subject and round (round trips; resumes and live baseline)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--paused", options->paused, "Paused executions held at once (memory)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  return bench_subcommand(cmd, options, dorm::bench::run_execute_bench);
}

// What `dorm bench mcp` measures: which servers, how many connections, for how long.
void add_bench_mcp_load_options(CLI::App& cmd, dorm::bench::McpBenchOptions& o) {
  cmd.add_option("--servers", o.servers,
                 "Servers to drive (comma-separated): dorm (dorm serve), sdk (the official "
                 "TypeScript SDK server), bare (dorm bench http)")
      ->delimiter(',')
      ->default_str("dorm,sdk,bare")
      ->check(CLI::IsMember({"dorm", "sdk", "bare"}));
  cmd.add_option("--connections", o.connections,
                 "Connection counts, a run of each (comma-separated); each connection is an "
                 "MCP session of its own")
      ->delimiter(',')
      ->default_str("16,64")
      ->check(CLI::Range(1, 5000));
  cmd.add_option("--rounds", o.rounds, "Interleaved rounds (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd.add_option("--seconds", o.seconds, "Measured seconds per run")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  cmd.add_option("--warmup", o.warmup, "Seconds of calls before each measured span, not counted")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd.add_option("--window", o.window,
                 "Also report calls/s per window of this many seconds (when a run spans two "
                 "or more: --seconds 60 shows whether the rate stays flat)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
}

Subcommand add_bench_mcp(CLI::App& bench) {
  auto o = std::make_shared<dorm::bench::McpBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "mcp",
      "tools/call over HTTP: dorm serve against the official TypeScript SDK server and the "
      "bare Beast ceiling (dorm bench http), interleaved");
  add_bench_mcp_load_options(*cmd, *o);
  cmd->add_option("--timeout", o->timeout, "Seconds any one exchange of the client may take")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--start-timeout", o->start_timeout,
                  "Seconds each server may take to start, and to exit after SIGTERM")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--dorm", o->dorm, "The dorm binary that serves (default: this program)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--node", o->node,
                  "Node.js (20 or later) for the SDK server: a path or a name on PATH")
      ->capture_default_str();
  cmd->add_option("--sdk-server", o->sdk_server,
                  "The SDK server script (default: tools/bench/sdk_echo_server.mjs of this "
                  "build's sources)")
      ->check(CLI::ExistingFile);
  return bench_subcommand(cmd, o, dorm::bench::run_mcp_bench);
}

Subcommand add_bench_streams(CLI::App& bench) {
  auto o = std::make_shared<dorm::bench::StreamsBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "streams",
      "Many open standalone GET streams on dorm serve: memory per stream, keep-alive CPU, and "
      "tools/call latency on other sessions with the streams open and closed");
  cmd->add_option("--streams", o->streams, "Sessions, each holding its GET stream open")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  cmd->add_option("--rounds", o->rounds, "Rounds, a fresh server each (median over them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--connections", o->connections, "Connections calling tools/call on other sessions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--seconds", o->seconds, "Measured span of each tools/call run")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--warmup", o->warmup, "Seconds of calls before each span, not counted")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--keepalive", o->keepalive,
                  "Seconds the streams stay idle while the server's CPU is read (the server "
                  "sends a keep-alive every 15 s)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--timeout", o->timeout, "Seconds any one exchange of the client may take")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--start-timeout", o->start_timeout,
                  "Seconds the server may take to start, and to exit after SIGTERM")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--parallel", o->parallel, "Connections opening at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--dorm", o->dorm, "The dorm binary that serves (default: this program)")
      ->check(CLI::ExistingFile);
  return bench_subcommand(cmd, o, dorm::bench::run_streams_bench);
}

Subcommand add_bench_http(CLI::App& bench) {
  auto o = std::make_shared<dorm::bench::BareHttpOptions>();
  o->http_threads = dorm::tools::ServeOptions{}.http_threads;
  auto* cmd = bench.add_subcommand(
      "http",
      "Serve canned MCP answers in dorm serve's framing from a bare Beast server: the HTTP "
      "ceiling dorm bench mcp measures (runs until SIGTERM)");
  cmd->add_option("--listen", o->listen,
                  "Loopback address to listen on, HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--http-threads", o->http_threads, "HTTP I/O threads (default: dorm serve's)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  return bench_subcommand(cmd, o, dorm::bench::run_bare_http_server);
}
#endif

// `dorm bench` and, in builds configured with -Dbench=true, its subcommands.
void add_bench(CLI::App& app, Subcommands& commands) {
  auto* bench =
      app.add_subcommand("bench", "Benchmarks (release builds configured with -Dbench=true)");
  bench->require_subcommand(1);
#ifdef DORM_WITH_BENCH
  for (auto add : {add_bench_storage, add_bench_eviction, add_bench_runtime, add_bench_boot,
                   add_bench_storage_fill, add_bench_session_memory, add_bench_engine,
                   add_bench_execute, add_bench_mcp, add_bench_streams, add_bench_http}) {
    commands.push_back(add(*bench));
  }
#else
  commands.push_back({bench, [] {
                        dorm::log::error("benchmarks_not_built",
                                         {{"hint", "configure a release build with -Dbench=true"}});
                        return 1;
                      }});
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only lines meant for scripts (the ready line).
  dorm::log::configure(dorm::log::LogFormat::text, spdlog::level::info);

  CLI::App app{"dorm: a durable-object actor runtime and MCP server", "dorm"};
  LogChoice log;
  add_program_options(app, log);
  Subcommands commands{add_serve(app), add_inspect(app)};
  for (auto entry : {dorm::tools::add_backup_command(app), dorm::tools::add_restore_command(app)}) {
    commands.push_back({entry.command, std::move(entry.run)});
  }
  commands.push_back(add_deploy_sim(app));
  commands.push_back(add_torture(app));
  add_bench(app, commands);
  // dorm serve reads DORM_* variables and a config file; every other command reads only the
  // program's own variables (DORM_LOG_FORMAT, DORM_LOG_LEVEL).
  CLI::App* serve_command = commands.front().command;
  dorm::tools::Settings serve_settings({&app, serve_command}, serve_command);
  dorm::tools::Settings program_settings({&app}, nullptr);

  CLI11_PARSE(app, argc, argv);
  auto& settings = serve_command->parsed() ? serve_settings : program_settings;
  if (auto applied = settings.apply(dorm::tools::process_environment()); !applied) {
    std::fprintf(stderr, "dorm: %s\n", applied.error().message.c_str());
    return 2;
  }
  if (serve_settings.print_requested() && serve_command->parsed()) {
    std::fputs(serve_settings.effective_toml().c_str(), stdout);
    return 0;
  }
  // Both were checked against the same lists by CLI11 above.
  dorm::log::configure(*dorm::log::parse_format(log.format), *dorm::log::parse_level(log.level));
  for (const auto& c : commands) {
    if (c.command->parsed()) return c.run();
  }
  return 0;
}
