// A slot runs one execution at a time on a thread of its own, in an isolate of its own,
// and talks to the host over a socket of its own: its thread reads the frames for its
// executions itself, with no reader thread in between.
//
// The slot keeps its next context warm (created, prelude run) so that a start costs no
// context creation on the request path. Every execution gets a fresh context; a context is
// never reused. Between two inputs (a tool result, a timer) the slot runs the execution to
// quiescence — no pending microtasks — which is what makes a replay of the same inputs
// reproduce the same execution (journal.hpp).
//
// Limits: the V8 heap and ArrayBuffers (near-heap-limit callback, counting allocator),
// the stack (SetStackLimit), and per-call limits (logs, output, tool calls) are enforced on
// the slot thread; CPU and wall time by the worker's watchdog through check_limits(). Every
// overrun goes through kill(), which records the first reason and terminates JavaScript.
#pragma once

#include <v8.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "channel.hpp"
#include "dorm/engine/array_buffer_budget.hpp"
#include "dorm/engine/poll_before_sleep.hpp"
#include "dorm/engine/wire.hpp"
#include "prelude.hpp"
#include "prepared_cache.hpp"
#include "source_prep.hpp"
#include "startup_snapshot.hpp"

namespace dorm::engine::sandbox {

using SlotInput = std::variant<wire::Start, wire::ToolResult, wire::TimerFired, wire::Cancel>;

// Waiting for an input: nothing arrived before the deadline.
struct NoInput {};

class Slot {
 public:
  // The slot reads and writes its executions' frames on `channel`, a socket of its own.
  // `on_busy(true)` runs on the slot thread when an execution starts, `on_busy(false)` when it
  // has ended, so the worker's watchdog knows when to look; `busy_slots` is how many of the
  // worker's slots are between the two. `prepared` is the worker's cache of source
  // preparations, shared by its slots; `snapshot` (may be null) is what the slot's isolates
  // start from. While it is the worker's only busy slot, the slot polls its socket for up to
  // `poll_budget` before it sleeps waiting for a tool result (poll_before_sleep.hpp). After
  // running executions, once nothing arrives for `idle_trim` (zero: never), it collects its
  // isolate's garbage and returns free memory to the system (PoolOptions::idle_trim).
  Slot(Channel& channel, v8::Platform& platform, PreparedCache& prepared,
       StartupSnapshot* snapshot, std::function<void(bool running)> on_busy,
       const std::atomic<int>& busy_slots, std::chrono::microseconds poll_budget,
       std::chrono::milliseconds idle_trim);
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  // Starts the thread, which creates the isolate and the first context.
  void start();

  // Blocks until the isolate and first context are warm.
  void wait_warm();

  // From now on the slot reads its socket. Called once the worker is locked down, so no
  // frame is read before the seccomp filter is in place.
  void serve();

  // Called by the watchdog: terminates the running execution if it passed its CPU or wall
  // limit at `now`. Returns whether an execution is running.
  bool check_limits(std::chrono::steady_clock::time_point now);

  // Records why the running execution must end (the first reason wins) and terminates its
  // JavaScript. Thread-safe.
  void kill(FailureKind kind, std::string message);

  // The execution running on the calling thread's slot, for the fatal OOM handler.
  static void report_fatal_oom(const char* location);

  // Where a slot puts itself in its isolate's data (Isolate::SetData), for the callbacks
  // that V8 calls with only the isolate at hand.
  static constexpr std::uint32_t kIsolateDataIndex = 0;

  // The native functions the prelude gets as its bridge (for startup_snapshot()).
  static std::span<const BridgeFunction> bridge();

 private:
  struct Execution;
  using Outcome = wire::Message;  // Completed or Failed

  static void* thread_entry(void* self);
  void thread_main();
  void new_isolate(std::uint64_t heap_bytes);
  void make_warm();
  // Runs one execution to its outcome, sends it, and makes the next context.
  void run(wire::Start start);
  // Sorts the journal's entries for replay; false if its calls are not numbered 1, 2, ...
  static bool index_journal(Execution& e);
  // The watchdog's limits for `e`, from now; disarm_limits() once it has its outcome.
  void arm_limits(const Execution& e);
  void disarm_limits();
  // Inits the warm context with the journal's time and seed, then runs `e` in it.
  Outcome run_in_context(Execution& e, bool well_formed);
  // After an outcome: frees what the execution left charged and makes the next context.
  void ready_for_next(std::size_t array_buffers_at_start);
  void trim();
  Outcome execute(Execution& e, v8::Local<v8::Context> context);
  std::optional<Outcome> settle(Execution& e, v8::Local<v8::Context> context,
                                v8::Local<v8::Promise> promise);
  std::optional<Outcome> next_replay_input(Execution& e, v8::Local<v8::Context> context);
  std::optional<Outcome> deliver(Execution& e, v8::Local<v8::Context> context, const JournalEntry& input);
  std::optional<Outcome> killed();
  Outcome fail_with_exception(Execution& e, v8::Local<v8::Context> context,
                              v8::Local<v8::Value> exception);
  void drain();
  // The next frame from the host, or NoInput once `deadline` passes. The host sends a
  // slot only these four kinds; anything else, or bytes that are not a frame, ends the
  // process, as does the host closing the socket.
  // Polls for up to `poll_budget` before it sleeps (and tells poll_policy_ how that went).
  std::variant<SlotInput, NoInput> next_input(std::chrono::steady_clock::time_point deadline,
                                              std::chrono::microseconds poll_budget = {});
  void set_wall_deadline(const Execution& e);

  static void js_call(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void js_log(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void js_emit(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void js_timer_set(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void js_timer_clear(const v8::FunctionCallbackInfo<v8::Value>& info);
  static std::size_t near_heap_limit(void* data, std::size_t current, std::size_t initial);
  static void after_full_gc(v8::Isolate* isolate, v8::GCType type, v8::GCCallbackFlags flags, void* data);
  // Ends the current execution with memory_limit (after_full_gc, near_heap_limit).
  void end_over_heap_limit();

  Channel& channel_;
  v8::Platform& platform_;
  PreparedCache& prepared_;
  StartupSnapshot* snapshot_;
  std::function<void(bool)> on_busy_;
  const std::atomic<int>& busy_slots_;
  PollBeforeSleep poll_policy_;
  const std::chrono::milliseconds idle_trim_;
  bool ran_since_trim_ = false;  // an execution started since the last trim()
  pthread_t thread_{};

  // Start-up handshake with the worker's main thread.
  std::mutex start_mutex_;
  std::condition_variable start_cv_;
  bool warm_ready_ = false;
  bool serving_ = false;

  // Frames from the host, read on the slot thread only.
  wire::FrameReader reader_;

  // The isolate and what lives in it; touched only on the slot thread.
  v8::Isolate* isolate_ = nullptr;
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  std::shared_ptr<ArrayBufferBudget> budget_;
  std::unique_ptr<SourcePreparer> preparer_;
  std::uint64_t heap_bytes_ = 0;
  bool isolate_spent_ = false;  // hit its heap limit: replace it before the next execution
  struct Warm {
    v8::Global<v8::Context> context;
    v8::Global<v8::Function> init;
    v8::Global<v8::Function> fire;
  };
  std::optional<Warm> warm_;
  Execution* current_ = nullptr;

  // Shared with the watchdog and kill(), under kill_mutex_.
  std::mutex kill_mutex_;
  bool running_ = false;
  clockid_t cpu_clock_{};
  std::int64_t cpu_start_ns_ = 0;
  std::int64_t cpu_limit_ns_ = 0;
  std::uint64_t cpu_limit_ms_ = 0;
  std::uint64_t wall_limit_ms_ = 0;
  std::chrono::steady_clock::time_point wall_deadline_ = std::chrono::steady_clock::time_point::max();
  std::optional<std::pair<FailureKind, std::string>> kill_;
};

}  // namespace dorm::engine::sandbox
