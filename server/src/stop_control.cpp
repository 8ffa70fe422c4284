#include "stop_control.hpp"

#include <pthread.h>

#include <cstdlib>

#include "dorm/runtime/log.hpp"

namespace dorm::server {

void StopRequests::request(const StopSource& source) {
  std::lock_guard lock(mutex_);
  if (!stopped_) {
    log::info(source.event, {{source.key, source.value}});
    if (on_first_stop_) on_first_stop_();
    stopped_ = true;
  } else if (!forced_) {
    log::info(source.event, {{source.key, source.value}, {"effect", "drain cut short"}});
    forced_ = true;
  }
  cv_.notify_all();
}

void StopRequests::on_first_stop(std::function<void()> action) {
  std::lock_guard lock(mutex_);
  on_first_stop_ = std::move(action);
  if (stopped_ && on_first_stop_) on_first_stop_();
}

bool StopRequests::stop_requested() {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void StopRequests::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return stopped_; });
}

bool StopRequests::wait_for(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, d, [this] { return stopped_; });
}

bool StopRequests::wait_for_second(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, d, [this] { return forced_; });
}

SignalThread::SignalThread() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
}

void SignalThread::start(StopRequests& stop, std::function<void()> on_hup) {
  thread_ = std::thread([this, &stop, on_hup = std::move(on_hup)] {
    for (;;) {
      int signal = 0;
      sigwait(&set_, &signal);
      if (exiting_.load()) return;
      if (signal == SIGHUP) {
        log::info("signal_received", {{"signal", "SIGHUP"}});
        on_hup();
        continue;
      }
      stop.request({"signal_received", "signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"});
    }
  });
}

SignalThread::~SignalThread() {
  // Wake sigwait with a signal of our own, flagged so that the callbacks (which may touch
  // objects already destroyed) are skipped.
  if (thread_.joinable()) {
    exiting_.store(true);
    pthread_kill(thread_.native_handle(), SIGHUP);
    thread_.join();
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void StopWatchdog::arm(Clock::time_point deadline) {
  thread_ = std::thread([this, deadline] {
    std::unique_lock lock(mutex_);
    if (cv_.wait_until(lock, deadline, [this] { return done_; })) return;
    log::error("shutdown_forced",
               {{"stage", stage_}, {"effect", "exiting without finishing this stage"}});
    std::_Exit(0);  // the log flushes at warn and above
  });
}

void StopWatchdog::stage(std::string what) {
  std::lock_guard lock(mutex_);
  stage_ = std::move(what);
}

StopWatchdog::~StopWatchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace dorm::server
