// The engine pool's insides (internal to engine/src), shared by its two halves:
//  - pool.cpp routes executions: start, the queue, dispatch to a free slot, the frames of
//    a running execution, timers, and the pool thread's poll loop that reads them;
//  - worker_supervision.cpp keeps the worker processes: spawn, ready, heartbeats and
//    deadlines, loss (failing exactly what the lost worker held), replacement with
//    backoff after repeated crashes, and recycling after PoolOptions::recycle_after.
// Everything is touched on the pool thread only, unless a comment says otherwise, or by a
// thread that acts for a caller while the pool thread waits (Inbox::try_run).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dorm/engine/pool.hpp"
#include "dorm/runtime/clock.hpp"

namespace dorm::engine::detail {

using SteadyTime = std::chrono::steady_clock::time_point;
constexpr SteadyTime kNever = SteadyTime::max();

class PoolImpl;
struct WorkerProc;

// How other threads hand work to the pool thread. Executions hold it (not the pool), so an
// execution kept past its pool's lifetime — by an actor that outlives a shutdown — posts
// into a closed inbox instead of into freed memory.
//
// A thread that starts an execution or answers a tool call may also act on the pool's
// state itself, without waking the pool thread (try_run). The pool thread holds `state`
// while it works and lets go of it only while it waits in poll(), so whoever holds it has
// the pool to itself. Acting inline matters because a woken pool thread is often queued
// on the waker's CPU, behind the rest of the waker's work (an actor's turn and its commit):
// a start posted from a session's turn reached its slot ~0.1 ms later than one written
// from the turn (docs/engine.md, "Starting on the caller's thread").
struct Inbox {
  std::mutex mutex;
  std::vector<std::function<void()>> commands;
  bool closed = false;
  int wake_fd = -1;
  std::atomic<std::thread::id> loop_thread{};

  std::mutex state;      // see above
  bool serving = false;  // guarded by `state`: the pool thread's loop runs (so the pool lives)

  bool on_loop_thread() const { return loop_thread.load() == std::this_thread::get_id(); }

  // Queues `fn` for the pool thread; dropped if the pool is gone.
  void post(std::function<void()> fn) {
    std::lock_guard lock(mutex);
    if (closed) return;
    commands.push_back(std::move(fn));
    wake();
  }

  void wake() {
    std::uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof one);
  }

  // Runs `fn` on this thread with `state` held, if `state` is free right now (never waits
  // for it), the loop is serving, and no command is queued (what was posted earlier stays
  // ahead of this). False if it did not run: post instead. Never on the pool thread, nor
  // inside another try_run (`fn` may reach an observer that calls back into the pool).
  template <class F>
  bool try_run(F&& fn) {
    if (acting_inline() || on_loop_thread()) return false;
    std::unique_lock lock(state, std::try_to_lock);
    if (!lock.owns_lock() || !serving) return false;
    {
      std::lock_guard queued(mutex);
      if (!commands.empty()) return false;
    }
    Flag acting(acting_inline());
    fn();
    return true;
  }

  // Sets a flag for as long as it lives (an exception included).
  struct Flag {
    explicit Flag(bool& flag) : flag_(flag) { flag_ = true; }
    ~Flag() { flag_ = false; }
    Flag(const Flag&) = delete;
    Flag& operator=(const Flag&) = delete;
    bool& flag_;
  };

 private:
  static bool& acting_inline() {
    thread_local bool acting = false;
    return acting;
  }
};

// The host's side of one execution. Everything but the mutex-guarded parts is touched only
// on the pool thread.
class ExecutionImpl final : public Execution, public std::enable_shared_from_this<ExecutionImpl> {
 public:
  ExecutionImpl(PoolImpl& pool, std::shared_ptr<Inbox> inbox, ExecutionRequest request,
                std::shared_ptr<ExecutionObserver> observer)
      : pool_(pool),
        inbox_(std::move(inbox)),
        request_(std::move(request)),
        observer_(std::move(observer)) {}

  const std::string& id() const override { return request_.id; }
  void deliver_tool_result(std::uint32_t seq, bool ok, std::string value) override;
  void cancel() override;
  Journal journal() const override {
    std::lock_guard lock(journal_mutex_);
    return journal_;
  }

  void append(JournalEntry entry) {
    {
      std::lock_guard lock(journal_mutex_);
      journal_.entries.push_back(entry);
    }
    observer_->on_journal(entry);
  }

  PoolImpl& pool_;  // only touched on the pool thread (through inbox_), so only while it lives
  std::shared_ptr<Inbox> inbox_;
  ExecutionRequest request_;
  std::shared_ptr<ExecutionObserver> observer_;
  mutable std::mutex journal_mutex_;
  Journal journal_;

  // On the pool thread, before the observer hears the outcome.
  void mark_ended() {
    state = State::ended;
    ended.store(true, std::memory_order_release);
  }
  // `state == ended`, readable on any thread: cancel() after the end posts nothing.
  std::atomic<bool> ended{false};

  // Pool thread only.
  enum class State { queued, running, ended } state = State::queued;
  WorkerProc* worker = nullptr;
  std::size_t slot = 0;  // which of the worker's slots runs it
  std::uint64_t handle = 0;
  std::uint32_t next_seq = 1;           // the sequence number the next live call must carry
  std::uint32_t calls = 0;              // calls made, replayed ones included
  std::set<std::uint32_t> outstanding;  // calls without a delivered result
  std::uint32_t last_timer = 0;
  std::map<std::uint32_t, std::int64_t> timers;  // id → due (clock ms)
  SteadyTime hard_deadline = kNever;             // past it with no verdict: kill the worker
};

// One socket to a worker: its control socket, or one slot's.
struct Conn {
  int fd = -1;
  wire::FrameReader reader;
  std::string out;
};

// A slot of a worker, as the host sees it: its socket and what runs there.
struct SlotConn : Conn {
  std::shared_ptr<ExecutionImpl> exec;  // null: free
  bool warm = false;                    // free, and said its next context is made
  SteadyTime freed_at{};                // when it last became free
};

struct WorkerProc {
  pid_t pid = -1;
  Conn control;                 // ready, heartbeats, the worker's last words
  std::vector<SlotConn> conns;  // slot i's socket is conns[i]
  enum class State { starting, ready, retiring } state = State::starting;
  bool dying = false;  // said it is about to exit: counts as lost, not recycled
  bool took_snapshot = false;  // started from the pool's shared snapshot
  bool sent_snapshot = false;  // sent its own snapshot (at most once, before ready)
  std::uint32_t slots = 0;
  std::uint64_t started = 0;
  std::map<std::uint64_t, std::shared_ptr<ExecutionImpl>> running;
  std::uint64_t ping_nonce = 0;
  SteadyTime last_heard;
  SteadyTime spawned_at;
};

class PoolImpl final : public Pool {
 public:
  explicit PoolImpl(PoolOptions options);
  ~PoolImpl() override;

  // Spawns the workers and the pool thread; waits at most `ready_timeout` for every worker
  // to say it is ready.
  Result<void> open(std::chrono::milliseconds ready_timeout);

  Result<std::shared_ptr<Execution>> start(ExecutionRequest request,
                                           std::shared_ptr<ExecutionObserver> observer) override;
  Stats stats() const override;
  std::vector<pid_t> worker_pids() const override;
  std::optional<pid_t> worker_of(const Execution& execution) const override;

  void poke() override {
    post([] {});
  }

  // Runs `fn` on the pool thread.
  void post(std::function<void()> fn) { inbox_->post(std::move(fn)); }

  void deliver(const std::shared_ptr<ExecutionImpl>& e, std::uint32_t seq, bool ok,
               std::string value);
  void cancel(const std::shared_ptr<ExecutionImpl>& e);

  // Runs `fn` (pool work) for a caller inside Inbox::try_run, then wakes the pool thread
  // only if `fn` left it something its poll() does not know of: bytes it could not write,
  // a worker to replace, or a deadline before the loop's own wake-up.
  template <class F>
  void act_for_caller(F&& fn) {
    {
      Inbox::Flag acting(acting_for_caller_);
      fn();
    }
    publish_counts();
    bool sooner = std::chrono::steady_clock::now() + std::chrono::milliseconds(next_timeout_ms()) <
                  loop_wakes_at_;
    if (std::exchange(loop_must_look_, false) || lost_ || sooner) inbox_->wake();
  }

 private:
  // ---- executions (pool.cpp) ----

  Result<void> adopt_journal(ExecutionImpl& e);
  void dispatch();
  void poll_for_outcome(ExecutionImpl& e);
  static std::size_t pick_slot(const WorkerProc& w);
  void arm_hard_deadline(ExecutionImpl& e);
  void fire_timers();
  bool handle_execution_frame(WorkerProc& w, int which, wire::Message& message);
  bool on_tool_call(WorkerProc& w, ExecutionImpl& e, ToolCallEntry& c);
  bool on_timer_set(WorkerProc& w, ExecutionImpl& e, const wire::TimerSet& set);
  void detach(WorkerProc& w, ExecutionImpl& e);
  void finish_completed(ExecutionImpl& e, std::string_view json);
  void finish_failed(ExecutionImpl& e, FailureKind kind, std::string_view message);

  // ---- the pool thread's I/O (pool.cpp) ----

  void loop();
  void run_commands();
  int next_timeout_ms();
  // The only active execution, if exactly one is. Active: on a slot and not waiting for a
  // tool result, so it may send a frame any moment (one paused for an approval, warm in
  // its slot, is not).
  const ExecutionImpl* lone_active() const;
  // Free slots that have not said their next context is made: each is busy making it.
  std::size_t warming_count() const;
  // Copies the running and warming counts into stats_ (the loop does it before each wait).
  void publish_counts();
  void read_from(WorkerProc& w, int which);
  bool handle_frames(WorkerProc& w, int which);
  bool handle(WorkerProc& w, int which, wire::Message message);
  bool violation(WorkerProc& w, const std::string& why);
  // On the control socket.
  void send(WorkerProc& w, const wire::Message& m) { send(w, w.control, m); }
  // On slot `slot`'s socket.
  void send(WorkerProc& w, std::size_t slot, const wire::Message& m) {
    send(w, w.conns.at(slot), m);
  }
  void send(WorkerProc& w, Conn& c, const wire::Message& m);
  void flush(WorkerProc& w, Conn& c);

  // ---- worker processes (worker_supervision.cpp) ----

  Result<void> spawn();
  static void close_all(WorkerProc& w);
  void stop_worker(WorkerProc& w);
  bool on_worker_ready(WorkerProc& w, const wire::Ready& ready);
  bool on_worker_snapshot(WorkerProc& w, const wire::Snapshot& snapshot);
  void on_exiting(WorkerProc& w);
  void lose(WorkerProc& w, const std::string& why);
  void reap_lost();
  void check_deadlines();

  PoolOptions options_;
  PollBeforeSleep poll_policy_{options_.poll_before_sleep};  // the pool thread's
  SystemClock system_clock_;
  std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  std::thread thread_;
  bool stopping_ = false;

  mutable std::mutex mutex_;  // guards the members up to the next blank line
  std::condition_variable ready_cv_;
  unsigned ready_count_ = 0;
  std::size_t queued_count_ = 0;
  Stats stats_;
  std::vector<pid_t> pids_;
  std::map<const Execution*, pid_t> exec_pids_;

  // Pool thread only.
  std::vector<std::unique_ptr<WorkerProc>> workers_;
  std::deque<std::shared_ptr<ExecutionImpl>> queue_;
  std::uint64_t next_handle_ = 0;
  bool lost_ = false;
  unsigned consecutive_crashes_ = 0;
  SteadyTime respawn_at_ = kNever;
  // The startup snapshot the first worker made, as a sealed memfd handed to the workers
  // started after it (-1: none yet, or dropped because a worker died starting from it).
  int shared_snapshot_ = -1;
  // Guarded by inbox_->state, like the rest (for a caller acting inline: act_for_caller).
  SteadyTime loop_wakes_at_ = kNever;  // when the waiting loop's poll() times out by itself
  bool acting_for_caller_ = false;     // a caller's thread runs pool work (flush never loses)
  bool loop_must_look_ = false;        // that work left the loop something to do
  PollBeforeSleep start_poll_policy_{options_.start_polls_for_outcome};  // poll_for_outcome's
  const unsigned cores_ = std::max(1u, std::thread::hardware_concurrency());  // read once: a syscall
  std::shared_ptr<ExecutionImpl> judged_;
  FailureKind judged_kind_ = FailureKind::wall_limit;
  std::string judged_message_;
};

}  // namespace dorm::engine::detail
