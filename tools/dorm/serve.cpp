#include "serve.hpp"

#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dorm/mcp/http_server.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/runtime/otlp_file_tracer.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/open.hpp"

namespace dorm::tools {
namespace {

// Waits for SIGTERM or SIGINT on a thread of its own. The signals are blocked in every
// thread (the mask is inherited), so sigwait here is the only place they arrive.
class StopSignal {
 public:
  StopSignal() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }

  // `on_signal` runs on the signal thread, before waiters are woken.
  template <class F>
  void start(F on_signal) {
    thread_ = std::thread([this, on_signal] {
      int signal = 0;
      sigwait(&set_, &signal);
      if (exiting_.load()) return;
      log::info("signal_received", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"}});
      on_signal();
      std::lock_guard lock(mutex_);
      stopped_ = true;
      cv_.notify_all();
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

  ~StopSignal() {
    // A start-up failure returns before any signal: wake sigwait with one of our own,
    // flagged so that on_signal (which may touch objects already destroyed) is skipped.
    if (thread_.joinable()) {
      exiting_.store(true);
      if (!stop_requested()) pthread_kill(thread_.native_handle(), SIGTERM);
      thread_.join();
    }
  }

 private:
  sigset_t set_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::atomic<bool> exiting_{false};
};

}  // namespace

int serve(const ServeOptions& options) {
  auto listen = mcp::parse_listen_address(options.listen);
  if (!listen) {
    log::error("bad_listen_address", {{"error", listen.error().message}});
    return 1;
  }
  std::unique_ptr<trace::OtlpJsonFileTracer> tracer;
  if (!options.trace_file.empty()) {
    auto opened = trace::OtlpJsonFileTracer::open(options.trace_file);
    if (!opened) {
      log::error("trace_file_unusable", {{"error", opened.error().message}});
      return 1;
    }
    tracer = std::move(opened).value();
  }

  StopSignal stop;  // before any thread starts, so every thread inherits the blocked mask

  // Bind first: /healthz answers while storage opens, and a port conflict is reported
  // before any storage work.
  mcp::HttpServer::Options http;
  http.listen = *listen;
  http.io_threads = options.http_threads;
  auto server = mcp::HttpServer::start(http);
  if (!server) {
    log::error("bind_failed", {{"error", server.error().message}});
    return 1;
  }
  auto& srv = **server;
  // On a signal the listener closes first, so a successor can bind at once.
  stop.start([&srv] { srv.close_listener(); });
  log::info("bound", {{"address", srv.local_address().to_string()}});

  auto store = storage::open_backend(options.storage);
  if (!store) {
    log::error("storage_open_failed", {{"error", store.error().message}});
    return 1;
  }
  log::info("storage_open", {{"storage", (*store)->describe()}});

  RuntimeOptions runtime_options;
  runtime_options.tracer = tracer.get();
  auto runtime = Runtime::start(**store, runtime_options);
  if (!runtime) {
    log::error("runtime_start_failed", {{"error", runtime.error().describe()}});
    return 1;
  }
  log::info("runtime_started", {{"generation", (*runtime)->generation()},
                                {"start_kind", to_string((*runtime)->start_kind())}});

  if (!stop.stop_requested()) {
    srv.set_ready(true);
    std::printf("listening on http://%s/\n", srv.local_address().to_string().c_str());
    std::fflush(stdout);
    stop.wait();
  }
  (*runtime)->shutdown();
  log::info("stopped");
  return 0;
}

}  // namespace dorm::tools
