// dorm::server — serving MCP sessions over Streamable HTTP from a program of your own.
//
// A Server is what `dorm serve` runs, as a library: fill its tool, resource and prompt
// registries, call run(), and it serves `/mcp` until SIGTERM or SIGINT (or stop()), then
// drains and returns. run() starts in the same fixed order as `dorm serve`, so a restart
// right after a kill answers as soon as possible (docs/mcp.md, "Starting up"):
//
//   1. bind the listener (`/healthz` 200, `/readyz` 503, `/mcp` requests wait);
//   2. open storage — options.storage, a URI whose scheme may be one the program
//      registered (dorm/storage/open.hpp), retried while another process holds its lock —
//      or serve on the Backend given to use_storage();
//   3. start the runtime (a new generation) and the MCP session namespace;
//   4. reap: every session a dead predecessor left with calls in flight answers them;
//   5. serve `/mcp`, `/readyz` 200, and say so (the ready line, or on_ready).
//
// A stop (the first SIGTERM or SIGINT, or stop()) drains: the listener closes, `/readyz`
// answers 503, running calls finish for up to drain_timeout, the rest are answered with the
// `server_draining` error, the runtime stops and the store closes (docs/mcp.md, "Graceful
// drain"). A second stop cuts the drain short. If the stop has not finished shutdown_grace
// after the drain deadline, the process exits with status 0 at once: everything a client
// was told is done is committed, and the next start reaps the rest.
//
// This header brings in no Boost.Beast, CAF or RocksDB: a program with a few tools compiles
// it in a moment.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dorm/engine/poll_before_sleep.hpp"
#include "dorm/mcp/prompt_registry.hpp"
#include "dorm/mcp/resource_registry.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm {
class Runtime;
}

namespace dorm::server {

// Every option of `dorm serve`, under the same names (`--drain-timeout` is drain_timeout).
struct ServerOptions {
  std::string listen = "127.0.0.1:8808";
  std::string storage = "rocksdb:./dorm-data";
  int http_threads = 2;
  // "tokens", "oauth" or "none"; empty: "tokens" with auth_tokens, else "none".
  std::string auth;
  // JSON token file; empty = single-user mode (loopback --listen only).
  std::string auth_tokens;
  // Tokens (same format) that may read GET /metrics from another machine; empty: only
  // loopback callers may (docs/operations.md#metrics).
  std::string metrics_tokens;
  // --auth oauth (docs/auth.md): the authorization servers trusted (--oauth-issuer, one
  // or more), this server's resource URI (empty: http://<bound address>/mcp) and the
  // scopes every token needs.
  std::vector<std::string> oauth_issuers;
  std::string oauth_audience;
  std::vector<std::string> oauth_scopes;
  std::int64_t oauth_min_key_refresh_ms = 30'000;
  bool oauth_allow_http = false;
  // Also accept access tokens typed "JWT" or untyped (Keycloak, Microsoft Entra).
  bool oauth_accept_plain_jwt = false;
  // PEM bundle the authorization servers' TLS certificates must chain to; empty: the
  // system's trust store.
  std::string oauth_ca_file;
  // Opaque access tokens are introspected at this endpoint (RFC 7662), as the client
  // oauth_client_id with the secret read from oauth_client_secret_file; empty: refused.
  std::string oauth_introspection_url;
  std::string oauth_client_id;
  std::string oauth_client_secret_file;
  // How long an introspection answer is trusted (a revocation takes this long to show).
  std::int64_t oauth_introspection_cache_ttl_s = 60;
  // Beyond the loopback defaults.
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;
  // How long to wait for another process's storage lock: long enough for a predecessor's
  // drain window and shutdown grace (a rolling deploy starts the successor first).
  std::chrono::milliseconds lock_wait{45'000};
  // After a stop: how long running calls may go on finishing (0: stop them at once), and
  // how long the stop may take after that before the process exits regardless.
  std::chrono::milliseconds drain_timeout{30'000};
  std::chrono::milliseconds shutdown_grace{5'000};
  // SO_REUSEPORT, so a successor can bind the port while this server drains.
  bool reuse_port = false;
  // Open HTTP connections at most, streams included; one more gets 503 (0: no limit).
  std::size_t max_connections = 10'000;
  // Where finished spans go, one OTLP JSON line each; empty = no tracing.
  std::string trace_file;
  // Fixture tool sets to register (see dorm/actors/fixtures.hpp), after the tools the
  // program registered.
  std::vector<std::string> fixtures;
  std::size_t tools_page_size = 100;
  // The retry hint of priming events, in milliseconds.
  std::int64_t retry_ms = 500;
  // A session idle this long is deleted (--session-ttl).
  std::int64_t session_ttl_s = 7 * 24 * 60 * 60;
  // Development switches (hidden from --help), to reproduce the incident the reaper and
  // priming events fix: --no-reaper leaves calls killed by a restart unanswered,
  // --no-priming sends no priming event even to 2025-11-25 sessions.
  bool reaper = true;
  // Scale-out (docs/scale-out.md): this server as node `node_id` of several over one
  // shared store (--node-id); where the others reach it (--advertise; empty: the address
  // it listens on); how long its leases last and how often it renews them.
  std::string node_id;
  std::string advertise;
  std::int64_t lease_ms = 10'000;
  std::int64_t lease_renew_ms = 3'000;
  // A request for a session another node serves is forwarded there (docs/scale-out.md,
  // "Forwarding"); its answer's header must come within this (--forward-timeout-ms).
  std::int64_t forward_timeout_ms = 300'000;
  // Wake the sessions holding in-flight records before turning ready (--no-reap-at-boot).
  bool reap_at_boot = true;
  bool priming = true;
  // MCP 2026-07-28 (stateless requests, input_required) beside the 2025 revisions on the
  // same endpoint (--modern-era; docs/mcp.md, "Two eras on one endpoint").
  bool modern_era = false;
  // Code mode: the execute and resume tools, run by a pool of sandboxed engine workers.
  bool code_mode = false;
  unsigned engine_workers = 0;  // 0: one per core
  unsigned engine_slots = 4;    // executions per worker at once
  // How long an engine waiter polls before sleeping while one execution runs
  // (engine::PollBeforeSleep); 0: never.
  long engine_poll_us = engine::PollBeforeSleep::kDefaultBudget.count();
  // How long starting an execution waits for its outcome when no other is active
  // (engine::PoolOptions::start_polls_for_outcome); 0: never.
  long engine_start_poll_us = engine::PollBeforeSleep::kDefaultStartBudget.count();
  // How long a paused execution waits for resume before its approval is declined.
  std::int64_t approval_timeout_ms = 4 * 60 * 1000;
  // How long a paused execution keeps its isolate for a prompt resume (0: cold at once).
  std::int64_t warm_window_ms = 30'000;

  // ---- for programs that embed the server (dorm serve leaves them as they are) ----
  // What `initialize` answers as serverInfo.
  std::string name = "dorm";
  // The engine worker program that code_mode spawns. Empty: `dorm-engine-worker` next to
  // the program, in ../engine (the build tree's layout), or in the install prefix's bin/.
  std::string engine_worker;
  // serverInfo.version, and the runtime's version label: a start with a new label is a
  // redeploy (docs/runtime.md). Empty: dorm's own version.
  std::string version;
  // run() stops at SIGTERM or SIGINT and reloads the token file at SIGHUP; it blocks those
  // signals in its thread and the threads it starts, and takes them with a thread of its
  // own. false: run() leaves signals alone and only stop() stops it (a program that
  // handles signals itself, a test).
  bool handle_signals = true;
  // Runs once when the server is ready, on run()'s thread, with the endpoint's URL
  // (`http://127.0.0.1:PORT/mcp`, the real port when listen asked for port 0). Unset: the
  // ready line `listening on URL` goes to stdout, as `dorm serve` prints it.
  std::function<void(const std::string& url)> on_ready;
};

class Server {
 public:
  explicit Server(ServerOptions options = {});
  // Stops a run() still going on another thread as a second stop would, and waits for it.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // What every session offers. Fill them before run(), from one thread (adding is not
  // thread-safe); from run() on they are read by every session and must not change.
  mcp::ToolRegistry& tools();
  mcp::ResourceRegistry& resources();
  mcp::PromptRegistry& prompts();

  // Serve on `store` instead of opening options.storage (lock_wait then does not apply).
  // `store` must outlive run(); the server writes its generation and clean-shutdown marker
  // into it, as into any store, and does not close it. Call before run().
  void use_storage(storage::Backend& store);

  // Runs once, on run()'s thread, right after the runtime starts (step 3) and before any
  // request is served: the place to register the program's own durable object classes
  // (Runtime::register_namespace) and to keep a reference to the runtime for the tools
  // that send to them. The runtime lives until run() returns; it is shut down after the
  // drain, so no tool runs after that. An error ends run() with status 1 (logged, with
  // its message). Call before run(); a second call replaces the first hook.
  void on_runtime_started(std::function<Result<void>(Runtime&)> hook);

  // Starts, serves until a stop, drains, and returns the exit status: 0 after a stop,
  // 1 when it could not start (the reason is logged: a bad option, an address it cannot
  // bind, storage it cannot open, ...). Blocks the calling thread; once per Server (a
  // second call returns 1 at once).
  int run();

  // Stops run() as SIGTERM does: the first call starts the drain, a second cuts it short.
  // Thread-safe and never blocks; may come before run() (it then starts, stops at once and
  // returns 0) or after it returned (does nothing).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::server
