#include "serve.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dorm/mcp/http_server.hpp"
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
      spdlog::info("received {}, stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
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
    spdlog::error("{}", listen.error().message);
    return 1;
  }

  StopSignal stop;  // before any thread starts, so every thread inherits the blocked mask

  // Bind first: /healthz answers while storage opens, and a port conflict is reported
  // before any storage work.
  mcp::HttpServer::Options http;
  http.listen = *listen;
  http.io_threads = options.http_threads;
  auto server = mcp::HttpServer::start(http);
  if (!server) {
    spdlog::error("{}", server.error().message);
    return 1;
  }
  auto& srv = **server;
  // On a signal the listener closes first, so a successor can bind at once.
  stop.start([&srv] { srv.close_listener(); });
  spdlog::info("bound {}", srv.local_address().to_string());

  auto store = storage::open_backend(options.storage);
  if (!store) {
    spdlog::error("{}", store.error().message);
    return 1;
  }
  spdlog::info("storage open: {}", (*store)->describe());

  if (!stop.stop_requested()) {
    srv.set_ready(true);
    std::printf("listening on http://%s/\n", srv.local_address().to_string().c_str());
    std::fflush(stdout);
    stop.wait();
  }
  spdlog::info("stopped");
  return 0;
}

}  // namespace dorm::tools
