// How a running server learns that it must stop, and what bounds the stop.
//
// StopRequests is the one place a stop arrives, whoever asks: the signal thread (SIGTERM,
// SIGINT) or Server::stop(). The first request starts the graceful stop, a second one cuts
// its drain short. SignalThread turns signals into requests; StopWatchdog ends the process
// if the stop takes too long.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dorm::server {

// Who asked for a stop, for the log line: `event key=value`.
struct StopSource {
  const char* event;  // "signal_received", "stop_requested"
  const char* key;    // "signal", "by"
  const char* value;  // "SIGTERM", "Server::stop"
};

class StopRequests {
 public:
  // A request: the first runs the on_first_stop action (under the lock, so the action is
  // never run after on_first_stop({}) returned) and wakes wait(); a second one wakes
  // wait_for_second(); later ones do nothing. Thread-safe, never blocks on the server.
  void request(const StopSource& source);

  // What the first request does at once (the server's begin_drain, so the listener closes
  // before anything else). Runs now if a request came already. Empty: nothing (clear it
  // before what it touches goes away).
  void on_first_stop(std::function<void()> action);

  bool stop_requested();
  // Waits for a first request.
  void wait();
  // Waits at most `d` for a first request; true if one came.
  bool wait_for(std::chrono::milliseconds d);
  // Waits at most `d` for a second request; true if one came.
  bool wait_for_second(std::chrono::milliseconds d);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> on_first_stop_;
  bool stopped_ = false;  // a first request came
  bool forced_ = false;   // a second one came
};

// Takes SIGTERM, SIGINT and SIGHUP on a thread of its own. The constructor blocks them in
// the calling thread, and threads started from it later inherit that mask, so sigwait on
// this thread is the only place they arrive; the destructor puts the old mask back.
class SignalThread {
 public:
  SignalThread();
  ~SignalThread();
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;

  // SIGTERM and SIGINT become requests to `stop`; `on_hup` runs at each SIGHUP. Both run
  // on the signal thread. `stop` must outlive this object.
  void start(StopRequests& stop, std::function<void()> on_hup);

 private:
  sigset_t set_;
  sigset_t old_mask_;
  std::thread thread_;
  std::atomic<bool> exiting_{false};
};

// Bounds a graceful stop: if the process has not finished stopping by `deadline`, logs
// what it abandoned and exits at once. Everything a client was told is done is already
// committed (durably, for the store's durability), so exiting loses nothing; the next
// start finds no clean-shutdown marker and reaps what was still running.
class StopWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  void arm(Clock::time_point deadline);
  // What the stop is doing now, for the log if it has to give up.
  void stage(std::string what);
  ~StopWatchdog();

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string stage_ = "draining";
};

}  // namespace dorm::server
