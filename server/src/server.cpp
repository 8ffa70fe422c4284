#include "dorm/server/server.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "dorm/actors/approval_page.hpp"
#include "dorm/actors/boot_reaper.hpp"
#include "dorm/actors/code_mode.hpp"
#include "dorm/actors/mcp_request.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/server_metrics.hpp"
#include "dorm/engine/pool.hpp"
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
#include "graceful_stop.hpp"
#include "server_auth.hpp"
#include "stop_control.hpp"
#include "storage_watch.hpp"

namespace dorm::server {
namespace {

// Opens storage, retrying while another process holds its lock (a predecessor that is
// still shutting down), for up to `wait`. A stop request ends the wait.
Result<std::unique_ptr<storage::Backend>> open_storage(const std::string& uri,
                                                       std::chrono::milliseconds wait,
                                                       StopRequests& stop) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  bool logged = false;
  for (;;) {
    auto store = storage::open_backend(uri);
    if (store || store.error().code != ErrorCode::busy) return store;
    if (std::chrono::steady_clock::now() >= deadline) return store;
    if (!logged) {
      log::info("storage_locked_waiting",
                {{"error", store.error().message}, {"lock_wait_ms", wait.count()}});
      logged = true;
    }
    if (stop.wait_for(std::chrono::milliseconds(50))) return store;
  }
}

// Adds allowed_origins and allowed_hosts to `policy`; false (logged) on a bad entry.
bool add_allowed_callers(const ServerOptions& options, mcp::CheckPolicy& policy) {
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

// Opens trace_file into `tracer` (left null without one); false (logged) when it cannot.
bool open_tracer(const ServerOptions& options, std::unique_ptr<trace::OtlpJsonFileTracer>& tracer) {
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
    log::warn(
        "descriptor_limit_low",
        {{"limit", static_cast<std::int64_t>(limit.rlim_cur)},
         {"max_connections", static_cast<std::int64_t>(max_connections)},
         {"hint", "raise the hard limit (ulimit -Hn, LimitNOFILE=) or lower --max-connections"}});
  }
}

// 1. Bind: /healthz answers while storage opens, /mcp requests wait, and a port conflict
//    is reported before any storage work. Null (logged) when the address cannot be bound.
std::unique_ptr<mcp::HttpServer> bind_listener(
    const ServerOptions& options, const mcp::ListenAddress& listen, const mcp::CheckPolicy& policy,
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
  http.check_head = [policy,
                     oauth](const mcp::HttpRequest& head) -> std::optional<mcp::HttpResponse> {
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

// Forgets the metrics' sources when it goes out of scope: one is declared right after each
// source is attached, so that whichever way a function returns, the metrics let go of a
// source before it is destroyed (the I/O threads may still be scraping).
struct MetricsDetach {
  actors::ServerMetrics& metrics;
  ~MetricsDetach() { metrics.detach(); }
};

// The engine pool for code_mode, null without it. Call it on the thread that serves:
// the workers die with the thread that spawned them (PR_SET_PDEATHSIG).
Result<std::unique_ptr<engine::Pool>> create_engine_pool(const ServerOptions& options) {
  if (!options.code_mode) return std::unique_ptr<engine::Pool>();
  engine::PoolOptions pool_options;
  pool_options.worker_path =
      options.engine_worker.empty() ? engine::default_worker_path() : options.engine_worker;
  pool_options.workers = options.engine_workers;
  pool_options.slots_per_worker = options.engine_slots;
  pool_options.poll_before_sleep = std::chrono::microseconds(options.engine_poll_us);
  pool_options.start_polls_for_outcome = std::chrono::microseconds(options.engine_start_poll_us);
  if (!options.engine_worker.empty() && !std::filesystem::is_regular_file(options.engine_worker)) {
    return Error{ErrorCode::not_found,
                 "engine_worker '" + options.engine_worker + "' is not a file"};
  }
  if (pool_options.worker_path.empty()) {
    return Error{ErrorCode::not_found,
                 "dorm-engine-worker was not found next to the program, in ../engine or "
                 "in the install prefix's bin/"};
  }
  return engine::Pool::create(pool_options);
}

// Takes the pool from `pool_created` into `pool` and turns code mode on in `session_options`
// with `code_mode` (which they point to); false (logged) when either fails.
bool enable_code_mode(const ServerOptions& options,
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

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)) {
    if (options.version.empty()) options.version = DORM_VERSION;
  }

  // The steps of run(), in order; each returns the exit status. Between them, what one
  // step made and a later one uses lives in a Startup (below).
  struct Startup;
  int start();
  int serve_bound(Startup& s);
  int serve_until_stopped(Startup& s, Runtime& runtime, storage::Backend& store);

  // What every session gets from the options; the development switches say what they break.
  actors::McpSessionOptions session_options();
  // `url`: where this server listens (a scale-out node's default --advertise).
  Result<std::unique_ptr<Runtime>> start_runtime(storage::Backend& store, trace::Tracer* tracer,
                                                 const std::string& url);

  ServerOptions options;
  mcp::ToolRegistry tools;
  mcp::ResourceRegistry resources;
  mcp::PromptRegistry prompts;
  storage::Backend* given_store = nullptr;
  std::function<Result<void>(Runtime&)> runtime_started;
  StopRequests stop;

  // Whether run() is going on, so the destructor can wait for it.
  enum class RunState { before, running, done };
  std::mutex run_mutex;
  std::condition_variable run_cv;
  RunState run_state = RunState::before;
};

// What run() has made so far; destroyed in reverse order of declaration, so the HTTP
// server outlives the endpoint and pages that answer through it.
struct Server::Impl::Startup {
  explicit Startup(const std::string& version) : metrics(version) {}

  std::unique_ptr<mcp::AuthTokens> tokens;
  std::unique_ptr<mcp::AuthTokens> metrics_tokens;
  std::unique_ptr<mcp::OAuthResource> oauth;
  mcp::McpEndpoint::Options endpoint_options;
  // The 2026-07-28 revision (--modern-era): what its answers say and the request objects'
  // options; both outlive the runtime.
  mcp::ModernServer modern;
  actors::McpRequestOptions requests;
  mcp::ListenHub listen;
  std::unique_ptr<trace::OtlpJsonFileTracer> tracer;
  // GET /metrics (docs/operations.md#metrics), answered on the I/O threads from the bind
  // on: declared before the server, so it outlives the threads that scrape it.
  actors::ServerMetrics metrics;
  mcp::MetricsAccessPolicy metrics_access;
  std::unique_ptr<mcp::HttpServer> server;
};

Result<std::unique_ptr<Runtime>> Server::Impl::start_runtime(storage::Backend& store,
                                                             trace::Tracer* tracer,
                                                             const std::string& url) {
  RuntimeOptions runtime_options;
  runtime_options.tracer = tracer;
  runtime_options.version_label = options.version;
  // Turns are synchronous (a tool may hold one): more workers than cores keeps one busy
  // session from holding up the others.
  runtime_options.workers = std::max(4u, std::thread::hardware_concurrency());
  if (!options.node_id.empty()) {
    runtime_options.node.id = options.node_id;
    runtime_options.node.address = options.advertise.empty() ? url : options.advertise;
    runtime_options.node.lease = std::chrono::milliseconds(options.lease_ms);
    runtime_options.node.renew_every = std::chrono::milliseconds(options.lease_renew_ms);
  }
  return Runtime::start(store, runtime_options);
}

actors::McpSessionOptions Server::Impl::session_options() {
  actors::McpSessionOptions session_options;
  session_options.server_name = options.name;
  session_options.server_version = options.version;
  session_options.tools = &tools;
  session_options.resources = &resources;
  session_options.prompts = &prompts;
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
    log::warn("dev_switch", {{"switch", "--no-priming"},
                             {"effect",
                              "streams get no priming event: clients cannot resume them before "
                              "their first event"}});
  }
  return session_options;
}

// Checks the options, then 1. binds; the rest follows in serve_bound.
int Server::Impl::start() {
  auto listen = mcp::parse_listen_address(options.listen);
  if (!listen) {
    log::error("bad_listen_address", {{"error", listen.error().message}});
    return 1;
  }
  std::string mode = auth_mode(options, *listen);
  if (mode.empty()) return 1;
  Startup s(options.version);
  // Before any thread starts (the OAuth key fetcher is the first), so every thread
  // inherits the blocked mask and signals reach only the signal thread. Declared after
  // the token file, which the signal thread reloads at SIGHUP, so it stops first.
  std::optional<SignalThread> signals;
  if (options.handle_signals) signals.emplace();
  if (mode == "tokens") {
    auto loaded = mcp::AuthTokens::open(options.auth_tokens);
    if (!loaded) {
      log::error("auth_tokens_unusable", {{"error", loaded.error().message}});
      return 1;
    }
    s.tokens = std::move(loaded).value();
  } else if (mode == "oauth") {
    auto started = start_oauth(options);
    if (!started) {
      log::error("bad_auth_options", {{"error", started.error().message}});
      return 1;
    }
    s.oauth = std::move(started).value();
  }
  if (!options.metrics_tokens.empty()) {
    auto loaded = mcp::AuthTokens::open(options.metrics_tokens);
    if (!loaded) {
      log::error("metrics_tokens_unusable", {{"error", loaded.error().message}});
      return 1;
    }
    s.metrics_tokens = std::move(loaded).value();
  }
  s.endpoint_options.policy.tokens = s.tokens.get();
  s.endpoint_options.oauth = s.oauth.get();
  if (!add_allowed_callers(options, s.endpoint_options.policy)) return 1;
  s.metrics_access = mcp::MetricsAccessPolicy{s.metrics_tokens.get(),
                                              s.endpoint_options.policy.allowed_hosts,
                                              s.endpoint_options.policy.allowed_origins};
  std::vector<mcp::HttpServer::Options::LocalRoute> local_routes{
      {"/metrics", [&s](const mcp::HttpRequest& head) {
         return s.metrics.scrape(head, s.metrics_access);
       }}};
  for (const auto& set : options.fixtures) {
    if (auto ok = actors::register_fixtures({tools, resources, prompts}, set); !ok) {
      log::error("bad_fixtures", {{"error", ok.error().message}});
      return 1;
    }
  }
  if (!open_tracer(options, s.tracer)) return 1;

  s.server = bind_listener(options, *listen, s.endpoint_options.policy, s.oauth.get(),
                           std::move(local_routes));
  if (!s.server) return 1;
  auto& srv = *s.server;
  s.metrics.attach_http(srv);
  MetricsDetach detach_http{s.metrics};
  if (s.oauth && options.oauth_audience.empty()) {
    // Requests before this line are answered 503 (the audience is not known yet).
    if (auto ok = s.oauth->set_resource("http://" + srv.local_address().to_string() + "/mcp");
        !ok) {
      log::error("bad_auth_options", {{"error", ok.error().message}});
      return 1;
    }
  }
  if (s.oauth) {
    std::string issuers;
    for (const auto& issuer : options.oauth_issuers) issuers += (issuers.empty() ? "" : " ") + issuer;
    log::info("oauth", {{"issuers", issuers}, {"metadata", s.oauth->metadata_url()}});
  }
  // At the first stop the server drains at once: the listener closes first, so a
  // successor can bind, and idle connections close, so clients reconnect to it.
  stop.on_first_stop([&srv] { srv.begin_drain(); });
  if (signals) {
    signals->start(stop, [&s] {
      reload_tokens(s.tokens.get(), "auth_tokens");
      reload_tokens(s.metrics_tokens.get(), "metrics_tokens");
    });
  }
  log::info("bound", {{"address", srv.local_address().to_string()}});
  int status = serve_bound(s);
  // A stop from now on finds nothing to drain (the HTTP server goes away below).
  stop.on_first_stop({});
  return status;
}

// 2.–4. once bound: storage and the engine pool, the runtime, then /mcp until a stop.
int Server::Impl::serve_bound(Startup& s) {
  // 2. Storage, waiting out a predecessor's lock, on a thread of its own while the
  //    engine's workers warm up here (a few hundred ms of CPU).
  std::future<Result<std::unique_ptr<storage::Backend>>> opening;
  if (!given_store) {
    opening = std::async(std::launch::async,
                         [&] { return open_storage(options.storage, options.lock_wait, stop); });
  }
  auto pool_created = create_engine_pool(options);
  std::unique_ptr<storage::Backend> opened;
  if (!given_store) {
    auto store = opening.get();
    if (!store) {
      // code=no_space: the disk has less free space than the store's reserve
      // (docs/storage.md, "Disk full").
      log::error("storage_open_failed",
                 {{"code", to_string(store.error().code)}, {"error", store.error().message}});
      return 1;
    }
    opened = std::move(store).value();
  }
  storage::Backend& store = given_store ? *given_store : *opened;
  log::info("storage_open", {{"storage", store.describe()}});
  // Every commit the server makes goes through this, which times and measures it.
  storage::MeteredBackend metered(store);
  s.metrics.attach_storage(metered);
  MetricsDetach detach_store{s.metrics};

  // 3. The runtime: bumps the generation.
  auto started = start_runtime(metered, s.tracer.get(),
                               "http://" + s.server->local_address().to_string() + "/mcp");
  if (!started) {
    log::error("runtime_start_failed", {{"error", started.error().describe()}});
    return 1;
  }
  auto& runtime = **started;
  s.metrics.attach_runtime(runtime);
  MetricsDetach detach_runtime{s.metrics};
  auto sessions = session_options();
  sessions.counters = &s.metrics.session_counters();
  if (options.modern_era) sessions.listen = &s.listen;
  std::unique_ptr<engine::Pool> pool;
  actors::CodeModeOptions code_mode;
  if (options.code_mode &&
      !enable_code_mode(options, pool_created, *s.server, tools, sessions, pool, code_mode)) {
    return 1;
  }
  if (runtime_started) {
    if (auto ok = runtime_started(runtime); !ok) {
      log::error("runtime_setup_failed", {{"error", ok.error().describe()}});
      return 1;
    }
  }
  if (pool) s.metrics.attach_engine(*pool);
  MetricsDetach detach_pool{s.metrics};
  if (auto ok = actors::register_mcp_session(runtime, sessions); !ok) {
    log::error("runtime_start_failed", {{"error", ok.error().describe()}});
    return 1;
  }
  if (options.modern_era) {
    s.modern = mcp::ModernServer{options.name, options.version, &tools, &resources, &prompts,
                                 options.tools_page_size, &s.listen};
    s.requests.server = &s.modern;
    s.requests.code_mode = pool ? &code_mode : nullptr;
    if (auto ok = actors::register_mcp_request(runtime, s.requests); !ok) {
      log::error("runtime_start_failed", {{"error", ok.error().describe()}});
      return 1;
    }
    s.endpoint_options.modern = &s.modern;
    s.endpoint_options.request_namespace = std::string(actors::kMcpRequestNamespace);
  }
  log::info("runtime_started", {{"generation", runtime.generation()},
                                {"start_kind", to_string(runtime.start_kind())}});
  if (!options.node_id.empty()) {
    log::info("node_started", {{"node", options.node_id},
                               {"lease_ms", options.lease_ms},
                               {"renew_ms", options.lease_renew_ms}});
  }
  // 4. Reap.
  if (options.reap_at_boot && options.reaper) reap_at_boot(runtime);
  if (options.modern_era && options.reaper) {
    // Tasks whose work a dead process was running are failed by their activation: waking
    // them now means a polling client learns it at its next tasks/get.
    if (auto woken = actors::wake_running_tasks(runtime); !woken) {
      log::error("task_wake_failed", {{"error", woken.error().describe()}});
    } else if (*woken > 0) {
      log::info("tasks_woken", {{"tasks", static_cast<std::int64_t>(*woken)}});
    }
  }
  // After the boot reap, which a client resuming right away is waiting for.
  s.metrics.count_stored();
  return serve_until_stopped(s, runtime, store);
}

// 5. Serve /mcp: requests that waited since the bind go through now, until a stop.
// Then the graceful stop (docs/mcp.md#graceful-drain): (a) the server drains (done at
// the first stop request: no new connections or sessions, /readyz 503, idle connections
// closed), (b) running calls finish within the drain window, (c) the rest are answered
// with server_draining, (d) the runtime stops and the store closes. A watchdog bounds it.
int Server::Impl::serve_until_stopped(Startup& s, Runtime& runtime, storage::Backend& store) {
  auto& srv = *s.server;
  auto* oauth = s.oauth.get();
  // Scale-out: requests for sessions another node serves are sent on to it.
  std::unique_ptr<mcp::NodeForwarder> forwarder;
  if (!options.node_id.empty()) {
    mcp::NodeForwarder::Options forwarding;
    forwarding.node_id = options.node_id;
    forwarding.response_timeout = std::chrono::milliseconds(options.forward_timeout_ms);
    auto started = mcp::NodeForwarder::start(forwarding);
    if (!started) {
      log::error("forwarder_failed", {{"error", started.error().describe()}});
      return 1;
    }
    forwarder = std::move(*started);
    s.endpoint_options.forwarder = forwarder.get();
    s.metrics.attach_forwarder(*forwarder);
  }
  mcp::McpEndpoint endpoint(runtime, s.endpoint_options);
  actors::ApprovalPage approval_page(runtime, s.endpoint_options.policy.tokens, oauth);
  srv.set_handler(
      [&endpoint, &approval_page, oauth](mcp::HttpRequest request, mcp::Respond respond) {
        std::string_view target = request.target;
        if (target.starts_with(actors::kApprovalPathPrefix)) {
          return approval_page.handle(request, std::move(respond));
        }
        if (target.starts_with(mcp::kProtectedResourceMetadataPath)) {
          if (!oauth || !oauth->is_metadata_path(target.substr(0, target.find('?')))) {
            return respond(mcp::HttpResponse{
                404, {{"Content-Type", "text/plain; charset=utf-8"}}, "not found\n"});
          }
          return respond(mcp::protected_resource_metadata(*oauth, request));
        }
        endpoint.handle(std::move(request), std::move(respond));
      });
  // From now on a full disk shows in /readyz and the log (storage_watch.hpp).
  auto watch = std::make_unique<StorageWatch>(store, srv);
  if (!stop.stop_requested()) {
    srv.set_ready(true);
    std::string url = "http://" + srv.local_address().to_string() + "/mcp";
    if (options.on_ready) {
      options.on_ready(url);
    } else {
      std::printf("listening on %s\n", url.c_str());
      std::fflush(stdout);
    }
    stop.wait();
  }
  endpoint.set_draining();
  srv.begin_drain();
  // Scale-out: each session's lease goes to the other nodes as soon as its calls are over
  // (docs/scale-out.md, "Rolling deploys"), not when this process exits.
  if (!options.node_id.empty()) runtime.hand_over();
  // Subscriptions end cleanly with their result; their clients listen again at the
  // successor.
  s.listen.end_all();
  auto drain_deadline = std::chrono::steady_clock::now() + options.drain_timeout;
  StopWatchdog watchdog;
  watchdog.arm(drain_deadline + options.shutdown_grace);
  if (let_calls_finish(runtime, drain_deadline, stop) > 0) {
    watchdog.stage("stopping running calls");
    stop_running_calls(runtime, srv, options.shutdown_grace);
  } else {
    answer_accepted(srv, options.shutdown_grace);
    srv.close_connections();
  }
  // The I/O threads end before the runtime stops (an actor system does not finish its
  // shutdown while they run); the server object outlives the runtime, whose sessions may
  // still answer through it as they stop.
  watchdog.stage("stopping the runtime and closing the store");
  watch.reset();
  stop.on_first_stop({});  // a first stop came already; this keeps it from touching srv
  srv.stop();
  // Relayed streams abort, and nothing forwarded calls into the endpoint any more.
  if (forwarder) forwarder->stop();
  // No scrape runs now (the I/O threads are gone): the sources may go.
  s.metrics.detach();
  // Requests parked for the authorization server's keys are answered (503, to sockets
  // already closed) before the endpoint and the page they would call into go away.
  if (oauth) oauth->stop();
  runtime.shutdown();
  s.server.reset();
  log::info("stopped");
  return 0;
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() {
  std::unique_lock lock(impl_->run_mutex);
  if (impl_->run_state != Impl::RunState::running) return;
  lock.unlock();
  stop();
  stop();
  lock.lock();
  impl_->run_cv.wait(lock, [this] { return impl_->run_state != Impl::RunState::running; });
}

void Server::on_runtime_started(std::function<Result<void>(Runtime&)> hook) {
  impl_->runtime_started = std::move(hook);
}

mcp::ToolRegistry& Server::tools() {
  return impl_->tools;
}
mcp::ResourceRegistry& Server::resources() {
  return impl_->resources;
}
mcp::PromptRegistry& Server::prompts() {
  return impl_->prompts;
}

void Server::use_storage(storage::Backend& store) {
  impl_->given_store = &store;
}

int Server::run() {
  {
    std::lock_guard lock(impl_->run_mutex);
    if (impl_->run_state != Impl::RunState::before) {
      log::error("server_run_again",
                 {{"error", "Server::run() was called already; a Server runs once"}});
      return 1;
    }
    impl_->run_state = Impl::RunState::running;
  }
  struct MarkDone {
    Impl& impl;
    ~MarkDone() {
      // Notified under the lock: a destructor waiting on another thread may free the
      // Server as soon as it sees `done`.
      std::lock_guard lock(impl.run_mutex);
      impl.run_state = Impl::RunState::done;
      impl.run_cv.notify_all();
    }
  } mark_done{*impl_};
  return impl_->start();
}

void Server::stop() {
  {
    std::lock_guard lock(impl_->run_mutex);
    if (impl_->run_state == Impl::RunState::done) return;
  }
  impl_->stop.request({"stop_requested", "by", "Server::stop"});
}

}  // namespace dorm::server
