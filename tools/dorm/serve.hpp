// `dorm serve`: bind, open storage, start the runtime, serve /mcp until SIGTERM or SIGINT.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dorm::tools {

struct ServeOptions {
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
  // --auth oauth (docs/auth.md): the authorization server, this server's resource URI
  // (empty: http://<bound address>/mcp) and the scopes every token needs.
  std::string oauth_issuer;
  std::string oauth_audience;
  std::vector<std::string> oauth_scopes;
  std::int64_t oauth_min_key_refresh_ms = 30'000;
  bool oauth_allow_http = false;
  // Beyond the loopback defaults.
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;
  // How long to wait for another process's storage lock: long enough for a predecessor's
  // drain window and shutdown grace (a rolling deploy starts the successor first).
  std::chrono::milliseconds lock_wait{45'000};
  // After SIGTERM: how long running calls may go on finishing (0: stop them at once), and
  // how long the stop may take after that before the process exits regardless.
  std::chrono::milliseconds drain_timeout{30'000};
  std::chrono::milliseconds shutdown_grace{5'000};
  // SO_REUSEPORT, so a successor can bind the port while this server drains.
  bool reuse_port = false;
  // Open HTTP connections at most, streams included; one more gets 503 (0: no limit).
  std::size_t max_connections = 10'000;
  // Where finished spans go, one OTLP JSON line each; empty = no tracing.
  std::string trace_file;
  // Fixture tool sets to register (see dorm/actors/fixtures.hpp).
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
  // Wake the sessions holding in-flight records before turning ready (--no-reap-at-boot).
  bool reap_at_boot = true;
  bool priming = true;
  // Code mode: the execute and resume tools, run by a pool of sandboxed engine workers.
  bool code_mode = false;
  unsigned engine_workers = 0;  // 0: one per core
  unsigned engine_slots = 4;    // executions per worker at once
  // How long a paused execution waits for resume before its approval is declined.
  std::int64_t approval_timeout_ms = 4 * 60 * 1000;
  // How long a paused execution keeps its isolate for a prompt resume (0: cold at once).
  std::int64_t warm_window_ms = 30'000;
};

// Runs the server in the calling thread until a stop signal; returns the exit status
// (0 after a signal, 1 when start-up failed, with the reason logged).
int serve(const ServeOptions& options);

}  // namespace dorm::tools
