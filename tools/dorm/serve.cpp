#include "serve.hpp"

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "dorm/actors/approval_page.hpp"
#include "dorm/actors/boot_reaper.hpp"
#include "dorm/actors/code_mode.hpp"
#include "dorm/actors/drain.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/server_metrics.hpp"
#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/dns_rebinding.hpp"
#include "dorm/mcp/endpoint.hpp"
#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/metrics_access.hpp"
#include "dorm/mcp/oauth_resource.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/runtime/otlp_file_tracer.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/metered_backend.hpp"
#include "dorm/storage/open.hpp"
#include "serve_auth.hpp"
#include "storage_watch.hpp"
#include "version.hpp"

namespace dorm::tools {
namespace {

// Waits for signals on a thread of its own: the first SIGTERM or SIGINT starts a graceful
// stop (a drain), a second one cuts the drain short; SIGHUP reloads. The signals are
// blocked in every thread (the mask is inherited), so sigwait here is the only place they
// arrive.
class Signals {
 public:
  Signals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }

  // `on_stop` runs on the signal thread at the first stop signal, before waiters are
  // woken; `on_hup` at each SIGHUP.
  void start(std::function<void()> on_stop, std::function<void()> on_hup) {
    thread_ = std::thread([this, on_stop = std::move(on_stop), on_hup = std::move(on_hup)] {
      for (;;) {
        int signal = 0;
        sigwait(&set_, &signal);
        if (exiting_.load()) return;
        if (signal == SIGHUP) {
          log::info("signal_received", {{"signal", "SIGHUP"}});
          on_hup();
          continue;
        }
        const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
        std::lock_guard lock(mutex_);
        if (!stopped_) {
          log::info("signal_received", {{"signal", name}});
          on_stop();
          stopped_ = true;
        } else if (!forced_) {
          log::info("signal_received", {{"signal", name}, {"effect", "drain cut short"}});
          forced_ = true;
        }
        cv_.notify_all();
      }
    });
  }

  bool stop_requested() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }

  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return stopped_; });
  }

  // Waits at most `d` for a stop; true if one came.
  bool wait_for(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, d, [this] { return stopped_; });
  }

  // Waits at most `d` for a second stop signal; true if one came.
  bool wait_for_second(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, d, [this] { return forced_; });
  }

  ~Signals() {
    // Wake sigwait with a signal of our own, flagged so that the callbacks (which may
    // touch objects already destroyed) are skipped.
    if (thread_.joinable()) {
      exiting_.store(true);
      pthread_kill(thread_.native_handle(), SIGHUP);
      thread_.join();
    }
  }

 private:
  sigset_t set_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;  // a first stop signal came
  bool forced_ = false;   // a second one came
  std::atomic<bool> exiting_{false};
};

// Bounds a graceful stop: if the process has not finished stopping by `deadline`, logs
// what it abandoned and exits at once. Everything a client was told is done is already
// committed (durably, for the store's durability), so exiting loses nothing; the next
// start finds no clean-shutdown marker and reaps what was still running.
class StopWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  void arm(Clock::time_point deadline) {
    thread_ = std::thread([this, deadline] {
      std::unique_lock lock(mutex_);
      if (cv_.wait_until(lock, deadline, [this] { return done_; })) return;
      log::error("shutdown_forced",
                 {{"stage", stage_}, {"effect", "exiting without finishing this stage"}});
      std::_Exit(0);  // the log flushes at warn and above
    });
  }

  // What the stop is doing now, for the log if it has to give up.
  void stage(std::string what) {
    std::lock_guard lock(mutex_);
    stage_ = std::move(what);
  }

  ~StopWatchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string stage_ = "draining";
};

// Opens storage, retrying while another process holds its lock (a predecessor that is
// still shutting down), for up to `wait`. A stop signal ends the wait.
Result<std::unique_ptr<storage::Backend>> open_storage(const std::string& uri,
                                                       std::chrono::milliseconds wait,
                                                       Signals& signals) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  bool logged = false;
  for (;;) {
    auto store = storage::open_backend(uri);
    if (store || store.error().code != ErrorCode::busy) return store;
    if (std::chrono::steady_clock::now() >= deadline) return store;
    if (!logged) {
      log::info("storage_locked_waiting", {{"error", store.error().message},
                                           {"lock_wait_ms", wait.count()}});
      logged = true;
    }
    if (signals.wait_for(std::chrono::milliseconds(50))) return store;
  }
}

// The tool, resource and prompt sets sessions offer; they must outlive the runtime.
struct Offerings {
  mcp::ToolRegistry tools;
  mcp::ResourceRegistry resources;
  mcp::PromptRegistry prompts;
};

// Adds --allowed-origins and --allowed-hosts to `policy`; false (logged) on a bad entry.
bool add_allowed_callers(const ServeOptions& options, mcp::CheckPolicy& policy) {
  for (const auto& origin : options.allowed_origins) {
    if (auto ok = mcp::check_allowed_origin_entry(origin); !ok) {
      log::error("bad_allowed_origin", {{"error", ok.error().message}});
      return false;
    }
    policy.allowed_origins.push_back(origin);
  }
  for (const auto& host : options.allowed_hosts) {
    if (auto ok = mcp::check_allowed_host_entry(host); !ok) {
      log::error("bad_allowed_host", {{"error", ok.error().message}});
      return false;
    }
    policy.allowed_hosts.push_back(host);
  }
  return true;
}

// Registers the --fixtures sets; false (logged) on an unknown one.
bool register_fixture_sets(const ServeOptions& options, Offerings& offered) {
  for (const auto& set : options.fixtures) {
    if (auto ok =
            actors::register_fixtures({offered.tools, offered.resources, offered.prompts}, set);
        !ok) {
      log::error("bad_fixtures", {{"error", ok.error().message}});
      return false;
    }
  }
  return true;
}

// Opens --trace-file into `tracer` (left null without one); false (logged) when it cannot.
bool open_tracer(const ServeOptions& options, std::unique_ptr<trace::OtlpJsonFileTracer>& tracer) {
  if (options.trace_file.empty()) return true;
  auto opened = trace::OtlpJsonFileTracer::open(options.trace_file);
  if (!opened) {
    log::error("trace_file_unusable", {{"error", opened.error().message}});
    return false;
  }
  tracer = std::move(opened).value();
  return true;
}

// Every connection holds a descriptor, and a Linux service usually starts with a soft
// limit of 1,024 under a far higher hard one: raise the soft limit to the hard one, and
// say so when even that leaves too few for the connection limit (the rest then fail at
// accept, answered 503 by the listener's reserve descriptor).
void raise_descriptor_limit(std::size_t max_connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  // Storage, engine workers, the log and the listener need some of their own.
  constexpr rlim_t kOwnDescriptors = 1024;
  if (max_connections > 0 && limit.rlim_cur < max_connections + kOwnDescriptors) {
    log::warn("descriptor_limit_low",
              {{"limit", static_cast<std::int64_t>(limit.rlim_cur)},
               {"max_connections", static_cast<std::int64_t>(max_connections)},
               {"hint", "raise the hard limit (ulimit -Hn, LimitNOFILE=) or lower --max-connections"}});
  }
}

// 1. Bind: /healthz answers while storage opens, /mcp requests wait, and a port conflict
//    is reported before any storage work. Null (logged) when the address cannot be bound.
std::unique_ptr<mcp::HttpServer> bind_listener(
    const ServeOptions& options, const mcp::ListenAddress& listen, const mcp::CheckPolicy& policy,
    const mcp::OAuthResource* oauth,
    std::vector<mcp::HttpServer::Options::LocalRoute> local_routes) {
  mcp::HttpServer::Options http;
  http.local_routes = std::move(local_routes);
  http.listen = listen;
  http.io_threads = options.http_threads;
  http.reuse_port = options.reuse_port;
  http.max_connections = options.max_connections;
  raise_descriptor_limit(options.max_connections);
  // Who is calling is checked before a body is read, from the first request on (policy
  // and tokens outlive the server: they are declared before it).
  http.check_head = [policy, oauth](const mcp::HttpRequest& head) -> std::optional<mcp::HttpResponse> {
    std::string_view target = head.target;
    // The Protected Resource Metadata is public: it tells a caller without a token where
    // to get one (the handler answers 404 under the prefix for any other path).
    if (oauth && target.starts_with(mcp::kProtectedResourceMetadataPath)) return std::nullopt;
    if (target.starts_with(actors::kApprovalPathPrefix)) {
      // The approval page: the one-time token in the link is the credential (a browser
      // sends no bearer token), or the owner's bearer token, which the page checks itself
      // against the execution's owner; Host and Origin are checked as for /mcp.
      auto page_policy = policy;
      page_policy.tokens = nullptr;
      return mcp::refuse_caller(head, page_policy);
    }
    return mcp::refuse_caller(head, policy, oauth);
  };
  if (options.code_mode) http.route_prefixes.push_back(std::string(actors::kApprovalPathPrefix));
  if (oauth) http.route_prefixes.push_back(std::string(mcp::kProtectedResourceMetadataPath));
  auto server = mcp::HttpServer::start(http);
  if (!server) {
    log::error("bind_failed", {{"error", server.error().message}});
    return nullptr;
  }
  return std::move(server).value();
}

// At SIGHUP: reads a token file again (nothing to do without one). `what` names it in the
// log lines: auth_tokens, metrics_tokens.
void reload_tokens(mcp::AuthTokens* tokens, std::string_view what) {
  if (!tokens) return;
  if (auto ok = tokens->reload(); !ok) {
    log::error(std::string(what) + "_reload_failed", {{"error", ok.error().message}});
  } else {
    log::info(std::string(what) + "_reloaded", {{"path", tokens->path()}});
  }
}

// The engine pool for --code-mode, null without it. Call it on the thread that serves:
// the workers die with the thread that spawned them (PR_SET_PDEATHSIG).
Result<std::unique_ptr<engine::Pool>> create_engine_pool(const ServeOptions& options) {
  if (!options.code_mode) return std::unique_ptr<engine::Pool>();
  engine::PoolOptions pool_options;
  pool_options.worker_path = engine::default_worker_path();
  pool_options.workers = options.engine_workers;
  pool_options.slots_per_worker = options.engine_slots;
  if (pool_options.worker_path.empty()) {
    return Error{ErrorCode::not_found,
                 "dorm-engine-worker was not found next to dorm or in ../engine"};
  }
  return engine::Pool::create(pool_options);
}

// 3. The runtime: bumps the generation.
Result<std::unique_ptr<Runtime>> start_runtime(storage::Backend& store, trace::Tracer* tracer) {
  RuntimeOptions runtime_options;
  runtime_options.tracer = tracer;
  runtime_options.version_label = kVersion;
  // Turns are synchronous (a tool may hold one): more workers than cores keeps one busy
  // session from holding up the others.
  runtime_options.workers = std::max(4u, std::thread::hardware_concurrency());
  return Runtime::start(store, runtime_options);
}

// What every session gets from the command line; the development switches say what they break.
actors::McpSessionOptions session_options_for(const ServeOptions& options, Offerings& offered) {
  actors::McpSessionOptions session_options;
  session_options.server_version = kVersion;
  session_options.tools = &offered.tools;
  session_options.resources = &offered.resources;
  session_options.prompts = &offered.prompts;
  session_options.page_size = options.tools_page_size;
  session_options.retry_ms = options.retry_ms;
  session_options.session_ttl = std::chrono::seconds(options.session_ttl_s);
  session_options.reaper = options.reaper;
  session_options.priming = options.priming;
  if (!options.reaper) {
    log::warn("dev_switch", {{"switch", "--no-reaper"},
                             {"effect", "calls killed by a restart are left unanswered"}});
  }
  if (!options.priming) {
    log::warn("dev_switch",
              {{"switch", "--no-priming"},
               {"effect", "streams get no priming event: clients cannot resume them before "
                          "their first event"}});
  }
  return session_options;
}

// Takes the pool from `pool_created` into `pool` and turns code mode on in `session_options`
// with `code_mode` (which they point to); false (logged) when either fails.
bool enable_code_mode(const ServeOptions& options,
                      Result<std::unique_ptr<engine::Pool>>& pool_created,
                      const mcp::HttpServer& srv, mcp::ToolRegistry& tools,
                      actors::McpSessionOptions& session_options,
                      std::unique_ptr<engine::Pool>& pool, actors::CodeModeOptions& code_mode) {
  if (!pool_created) {
    log::error("engine_start_failed", {{"error", pool_created.error().describe()}});
    return false;
  }
  pool = std::move(pool_created).value();
  code_mode.pool = pool.get();
  code_mode.approval_timeout = std::chrono::milliseconds(options.approval_timeout_ms);
  code_mode.warm_window = std::chrono::milliseconds(options.warm_window_ms);
  code_mode.approval_base_url = "http://" + srv.local_address().to_string();
  if (auto ok = actors::enable_code_mode(tools, session_options, code_mode); !ok) {
    log::error("code_mode_failed", {{"error", ok.error().describe()}});
    return false;
  }
  log::info("code_mode",
            {{"engine_workers", static_cast<std::int64_t>(pool->stats().workers_ready)}});
  return true;
}

// Eager reaping: the sessions a dead process left with calls in flight answer them now,
// before the first request, so a client resuming right away finds its error.
void reap_at_boot(Runtime& runtime) {
  auto started = std::chrono::steady_clock::now();
  auto reaped = actors::reap_at_boot_blocking(runtime, std::chrono::minutes(5));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count();
  if (!reaped) {
    // Not fatal: each session still reaps when it is next used.
    log::error("boot_reap_failed", {{"error", reaped.error().describe()}, {"ms", ms}});
  } else {
    log::info("boot_reap", {{"records", static_cast<std::int64_t>(reaped->records)},
                            {"sessions", static_cast<std::int64_t>(reaped->sessions)},
                            {"failed", static_cast<std::int64_t>(reaped->failed)},
                            {"ms", ms}});
    for (const auto& e : reaped->errors) log::warn("boot_reap_session_failed", {{"error", e}});
  }
}

// (b) of a graceful stop: running calls go on until none is left, the drain window ends or
// a second stop signal comes. Returns how many are still running (0 when unknown).
std::size_t let_calls_finish(Runtime& runtime, std::chrono::steady_clock::time_point deadline,
                             Signals& signals) {
  for (bool first = true;; first = false) {
    auto running = actors::running_calls(runtime);
    if (!running) {
      log::error("drain_failed", {{"error", running.error().describe()}});
      return 0;
    }
    auto left = deadline - std::chrono::steady_clock::now();
    if (first) {
      log::info("drain_started",
                {{"running_calls", static_cast<std::int64_t>(*running)},
                 {"drain_timeout_ms",
                  std::chrono::duration_cast<std::chrono::milliseconds>(left).count()}});
    }
    if (*running == 0 || left <= left.zero()) return *running;
    auto step = std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50));
    if (signals.wait_for_second(std::chrono::ceil<std::chrono::milliseconds>(step))) {
      return *running;
    }
  }
}

// (c) of a graceful stop: the calls still running are stopped and answered with the
// server_draining error, which goes out on their live streams; connections then close.
void stop_running_calls(Runtime& runtime, mcp::HttpServer& srv, std::chrono::milliseconds bound) {
  auto drained = actors::drain_running_calls(runtime, bound);
  if (!drained) {
    log::error("drain_failed", {{"error", drained.error().describe()}});
  } else {
    log::info("drain_stopped_calls", {{"calls", static_cast<std::int64_t>(drained->calls)},
                                       {"sessions", static_cast<std::int64_t>(drained->sessions)},
                                       {"failed", static_cast<std::int64_t>(drained->failed)}});
    for (const auto& e : drained->errors) log::warn("drain_session_failed", {{"error", e}});
  }
  // Answered streams end on their own and their connections close (the server drains);
  // give their last bytes a moment to go out, then close whatever is left.
  auto until = std::chrono::steady_clock::now() + std::min(bound, std::chrono::milliseconds(1000));
  while (srv.open_connections() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (auto left = srv.open_connections(); left > 0) {
    log::info("closing_connections", {{"connections", static_cast<std::int64_t>(left)}});
  }
  srv.close_connections();
}

// 4. Serve /mcp: requests that waited since the bind go through now, until a stop signal.
// Then the graceful stop (docs/mcp.md#graceful-drain): (a) the server drains (done by the
// signal handler: no new connections or sessions, /readyz 503, idle connections closed),
// (b) running calls finish within the drain window, (c) the rest are answered with
// server_draining, (d) the runtime stops and the store closes. A watchdog bounds it all.
int serve_until_stopped(Runtime& runtime, storage::Backend& store,
                        std::unique_ptr<mcp::HttpServer>& server,
                        const mcp::McpEndpoint::Options& endpoint_options,
                        mcp::OAuthResource* oauth, const ServeOptions& options,
                        actors::ServerMetrics& metrics, Signals& signals) {
  auto& srv = *server;
  mcp::McpEndpoint endpoint(runtime, endpoint_options);
  actors::ApprovalPage approval_page(runtime, endpoint_options.policy.tokens, oauth);
  srv.set_handler([&endpoint, &approval_page, oauth](mcp::HttpRequest request, mcp::Respond respond) {
    std::string_view target = request.target;
    if (target.starts_with(actors::kApprovalPathPrefix)) {
      return approval_page.handle(request, std::move(respond));
    }
    if (target.starts_with(mcp::kProtectedResourceMetadataPath)) {
      if (!oauth || !oauth->is_metadata_path(target.substr(0, target.find('?')))) {
        return respond(mcp::HttpResponse{404, {{"Content-Type", "text/plain; charset=utf-8"}}, "not found\n"});
      }
      return respond(mcp::protected_resource_metadata(*oauth, request));
    }
    endpoint.handle(std::move(request), std::move(respond));
  });
  // From now on a full disk shows in /readyz and the log (storage_watch.hpp).
  auto watch = std::make_unique<StorageWatch>(store, srv);
  if (!signals.stop_requested()) {
    srv.set_ready(true);
    std::printf("listening on http://%s/mcp\n", srv.local_address().to_string().c_str());
    std::fflush(stdout);
    signals.wait();
  }
  endpoint.set_draining();
  srv.begin_drain();
  auto drain_deadline = std::chrono::steady_clock::now() + options.drain_timeout;
  StopWatchdog watchdog;
  watchdog.arm(drain_deadline + options.shutdown_grace);
  if (let_calls_finish(runtime, drain_deadline, signals) > 0) {
    watchdog.stage("stopping running calls");
    stop_running_calls(runtime, srv, options.shutdown_grace);
  } else {
    srv.close_connections();
  }
  // The I/O threads end before the runtime stops (an actor system does not finish its
  // shutdown while they run); the server object outlives the runtime, whose sessions may
  // still answer through it as they stop.
  watchdog.stage("stopping the runtime and closing the store");
  watch.reset();
  srv.stop();
  // No scrape runs now (the I/O threads are gone): the sources may go.
  metrics.detach();
  // Requests parked for the authorization server's keys are answered (503, to sockets
  // already closed) before the endpoint and the page they would call into go away.
  if (oauth) oauth->stop();
  runtime.shutdown();
  server.reset();
  log::info("stopped");
  return 0;
}

// Forgets the metrics' sources when it goes out of scope: one is declared right after each
// source is attached, so that whichever way a function returns, the metrics let go of a
// source before it is destroyed (the I/O threads may still be scraping).
struct MetricsDetach {
  actors::ServerMetrics& metrics;
  ~MetricsDetach() { metrics.detach(); }
};

// 2.–4. once bound: storage and the engine pool, the runtime, then /mcp until a stop signal.
int serve_bound(const ServeOptions& options, std::unique_ptr<mcp::HttpServer>& server,
                const mcp::McpEndpoint::Options& endpoint_options, mcp::OAuthResource* oauth,
                Offerings& offered, trace::Tracer* tracer, actors::ServerMetrics& metrics,
                Signals& signals) {
  // 2. Storage, waiting out a predecessor's lock, on a thread of its own while the
  //    engine's workers warm up here (a few hundred ms of CPU).
  auto opening = std::async(std::launch::async, [&] {
    return open_storage(options.storage, options.lock_wait, signals);
  });
  auto pool_created = create_engine_pool(options);
  auto store = opening.get();
  if (!store) {
    // code=no_space: the disk has less free space than the store's reserve
    // (docs/storage.md, "Disk full").
    log::error("storage_open_failed",
               {{"code", to_string(store.error().code)}, {"error", store.error().message}});
    return 1;
  }
  log::info("storage_open", {{"storage", (*store)->describe()}});
  // Every commit the server makes goes through this, which times and measures it.
  storage::MeteredBackend metered(**store);
  metrics.attach_storage(metered);
  MetricsDetach detach_store{metrics};

  auto started = start_runtime(metered, tracer);
  if (!started) {
    log::error("runtime_start_failed", {{"error", started.error().describe()}});
    return 1;
  }
  auto& runtime = **started;
  metrics.attach_runtime(runtime);
  MetricsDetach detach_runtime{metrics};
  auto session_options = session_options_for(options, offered);
  session_options.counters = &metrics.session_counters();
  std::unique_ptr<engine::Pool> pool;
  actors::CodeModeOptions code_mode;
  if (options.code_mode && !enable_code_mode(options, pool_created, *server, offered.tools,
                                             session_options, pool, code_mode)) {
    return 1;
  }
  if (pool) metrics.attach_engine(*pool);
  MetricsDetach detach_pool{metrics};
  if (auto ok = actors::register_mcp_session(runtime, session_options); !ok) {
    log::error("runtime_start_failed", {{"error", ok.error().describe()}});
    return 1;
  }
  log::info("runtime_started", {{"generation", runtime.generation()},
                                {"start_kind", to_string(runtime.start_kind())}});
  if (options.reap_at_boot && options.reaper) reap_at_boot(runtime);
  // After the boot reap, which a client resuming right away is waiting for.
  metrics.count_stored();
  return serve_until_stopped(runtime, **store, server, endpoint_options, oauth, options, metrics,
                             signals);
}

}  // namespace

int serve(const ServeOptions& options) {
  auto listen = mcp::parse_listen_address(options.listen);
  if (!listen) {
    log::error("bad_listen_address", {{"error", listen.error().message}});
    return 1;
  }
  std::string mode = auth_mode(options, *listen);
  if (mode.empty()) return 1;
  // The token files outlive the signal thread, which reloads them at SIGHUP.
  std::unique_ptr<mcp::AuthTokens> tokens;
  std::unique_ptr<mcp::AuthTokens> metrics_tokens;
  // Before any thread starts (the OAuth key fetcher is the first), so every thread
  // inherits the blocked mask and signals reach only the signal thread.
  Signals signals;
  std::unique_ptr<mcp::OAuthResource> oauth;
  if (mode == "tokens") {
    auto loaded = mcp::AuthTokens::open(options.auth_tokens);
    if (!loaded) {
      log::error("auth_tokens_unusable", {{"error", loaded.error().message}});
      return 1;
    }
    tokens = std::move(loaded).value();
  } else if (mode == "oauth") {
    auto started = start_oauth(options);
    if (!started) {
      log::error("bad_auth_options", {{"error", started.error().message}});
      return 1;
    }
    oauth = std::move(started).value();
  }
  if (!options.metrics_tokens.empty()) {
    auto loaded = mcp::AuthTokens::open(options.metrics_tokens);
    if (!loaded) {
      log::error("metrics_tokens_unusable", {{"error", loaded.error().message}});
      return 1;
    }
    metrics_tokens = std::move(loaded).value();
  }
  mcp::McpEndpoint::Options endpoint_options;
  endpoint_options.policy.tokens = tokens.get();
  endpoint_options.oauth = oauth.get();
  if (!add_allowed_callers(options, endpoint_options.policy)) return 1;
  // GET /metrics (docs/operations.md#metrics): answered on the I/O threads from bind on.
  actors::ServerMetrics metrics(kVersion);
  mcp::MetricsAccessPolicy metrics_access{metrics_tokens.get(),
                                          endpoint_options.policy.allowed_hosts,
                                          endpoint_options.policy.allowed_origins};
  std::vector<mcp::HttpServer::Options::LocalRoute> local_routes{
      {"/metrics", [&metrics, &metrics_access](const mcp::HttpRequest& head) {
         return metrics.scrape(head, metrics_access);
       }}};
  Offerings offered;
  if (!register_fixture_sets(options, offered)) return 1;
  std::unique_ptr<trace::OtlpJsonFileTracer> tracer;
  if (!open_tracer(options, tracer)) return 1;

  auto server = bind_listener(options, *listen, endpoint_options.policy, oauth.get(),
                              std::move(local_routes));
  if (!server) return 1;
  auto& srv = *server;
  metrics.attach_http(srv);
  MetricsDetach detach_http{metrics};
  if (oauth && options.oauth_audience.empty()) {
    // Requests before this line are answered 503 (the audience is not known yet).
    if (auto ok = oauth->set_resource("http://" + srv.local_address().to_string() + "/mcp"); !ok) {
      log::error("bad_auth_options", {{"error", ok.error().message}});
      return 1;
    }
  }
  if (oauth) {
    log::info("oauth", {{"issuer", options.oauth_issuer}, {"metadata", oauth->metadata_url()}});
  }
  // On SIGTERM the server drains at once: the listener closes first, so a successor can
  // bind, and idle connections close, so clients reconnect to it.
  signals.start([&srv] { srv.begin_drain(); },
                [&tokens, &metrics_tokens] {
                  reload_tokens(tokens.get(), "auth_tokens");
                  reload_tokens(metrics_tokens.get(), "metrics_tokens");
                });
  log::info("bound", {{"address", srv.local_address().to_string()}});
  return serve_bound(options, server, endpoint_options, oauth.get(), offered, tracer.get(), metrics,
                     signals);
}

}  // namespace dorm::tools
