// engine::Pool — runs `execute` code in supervised, sandboxed worker processes.
//
// The server never hosts an isolate: Debian's V8 10.2 has no V8 sandbox, and the code is
// untrusted. The pool spawns N `dorm-engine-worker` processes (seccomp-bpf, no fds but a
// socket, rlimits; sandbox/worker_main.cpp), each running up to M executions at once, and
// talks to them in frames (wire.hpp). Everything a worker sends is checked as hostile input:
// a malformed frame, an unknown execution, bad JSON or a broken rule of the protocol kills
// that worker. A worker that dies — crash, V8's fatal OOM path, SIGKILL, a broken protocol —
// fails exactly the executions it held with engine_crashed, and is replaced with backoff.
// A worker is replaced after `recycle_after` executions to bound leaks.
//
// Threads: one pool thread does the I/O and calls the observers, except where a caller's
// thread acts on the pool while the pool thread waits (an inline start or tool result, and
// start()'s brief poll for a quick outcome: PoolOptions::start_polls_for_outcome). start(),
// the Execution methods and the Pool's accessors are thread-safe and never block on a
// worker (start() polls for at most that budget), so an actor may call them from its
// handlers. Observer callbacks must not block: forward to an actor.
//
// Time: the pool's Clock gives every execution its start time (Date.now()) and stamps each
// tool result and timer firing, which is what the journal records. setTimeout delays run on
// the same clock; with a VirtualClock, call poke() after advancing it.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/engine/failure.hpp"
#include "dorm/engine/journal.hpp"
#include "dorm/engine/limits.hpp"
#include "dorm/engine/poll_before_sleep.hpp"
#include "dorm/engine/wire.hpp"
#include "dorm/result.hpp"

namespace dorm {
class Clock;
}

namespace dorm::engine {

struct PoolOptions {
  // The dorm-engine-worker executable. default_worker_path() finds the one built or
  // installed beside the calling program.
  std::string worker_path;
  // Worker processes; 0 means one per core.
  unsigned workers = 0;
  // Executions each worker runs at once (each on its own thread and isolate).
  unsigned slots_per_worker = 4;
  // Executions after which a worker is replaced, to bound what a long-lived V8 leaks.
  std::uint64_t recycle_after = 1'000;
  // Starts that may wait for a free slot; start() refuses more.
  std::size_t max_queued = 10'000;
  // Heartbeat interval; a worker that misses five in a row is killed.
  std::chrono::milliseconds heartbeat{1'000};
  // How long past an execution's wall deadline the pool waits for the worker's own verdict
  // before it kills the worker (a single V8 builtin can ignore termination for a while).
  std::chrono::milliseconds hard_kill_grace{2'000};
  // RLIMIT_AS of each worker in MiB (0: none). Ignored under AddressSanitizer.
  std::uint64_t address_space_mb = 0;
  // Keep the worker's stderr (for debugging); otherwise it is /dev/null.
  bool keep_worker_stderr = false;
  // How long a waiter polls before it sleeps when only one execution runs: a slot waiting
  // for a tool result, the pool thread waiting for that execution's next frame
  // (poll_before_sleep.hpp). Zero turns it off; at most 10 ms.
  std::chrono::microseconds poll_before_sleep = PollBeforeSleep::kDefaultBudget;
  // How long start() waits for the outcome of an execution it handed to a waiting slot
  // itself, when no other execution is active (running and not waiting for a tool): an
  // answer within this time reaches the observer on the calling thread, inside start(). It
  // spins if a core is spare, else sleeps in ppoll(). The calling thread is held for at
  // most this long; after a miss, only every eighth start waits until one hits again
  // (poll_before_sleep.hpp). Zero turns it off; at most 10 ms.
  std::chrono::microseconds start_polls_for_outcome = PollBeforeSleep::kDefaultStartBudget;
  // A slot that ran executions and then had nothing to do for this long collects its
  // isolate's garbage and gives the freed memory back to the system, so a burst of
  // executions (a thousand of them pausing, say) leaves no resident memory behind once it is
  // over. Zero never does; at most 10 minutes.
  std::chrono::milliseconds idle_trim{2'000};
  // Host time; nullptr means the system clock. Must outlive the pool.
  const Clock* clock = nullptr;
};

// The worker executable next to the running program, or in ../engine/ from it (the build
// tree's layout). Empty if neither exists.
std::string default_worker_path();

struct ExecutionRequest {
  std::string id;      // for logs; the caller's execution id
  std::string source;  // as the model wrote it (prepared inside the sandbox)
  Limits limits;
  // Replay this journal first (its start time and seed too); none: a fresh execution.
  std::optional<Journal> journal;
};

// What an execution tells its owner, in order and one call at a time. After on_completed or
// on_failed nothing more is called. Calls come on the pool thread, except: on_journal for a
// tool result may come on the thread that delivered that result, and any call may come on
// the thread inside start() while it polls for the outcome (before start() returns; an
// owner that wants them after its own setup can hold them until then).
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // The code called tools.<path>(args). Answer with Execution::deliver_tool_result.
  virtual void on_tool_call(const ToolCallEntry& call) = 0;
  // A console line; the text as the user wrote it (format_log_line adds the level).
  virtual void on_log(wire::LogLevel /*level*/, std::string_view /*text*/) {}
  // emit(value), as JSON.
  virtual void on_emit(std::string_view /*value_json*/) {}
  // An entry was appended to the journal (store it to make the execution resumable).
  virtual void on_journal(const JournalEntry& /*entry*/) {}
  virtual void on_completed(std::string_view result_json) = 0;
  virtual void on_failed(FailureKind kind, std::string_view message) = 0;
};

// "[warn] text"
std::string format_log_line(wire::LogLevel level, std::string_view text);

class Execution {
 public:
  virtual ~Execution() = default;
  virtual const std::string& id() const = 0;
  // Answers tool call `seq`. ok: `value_json` is the result (JSON); !ok: the message the
  // call's promise rejects with (plain text). Ignored if the call is not outstanding or
  // the execution has ended. Thread-safe, non-blocking.
  virtual void deliver_tool_result(std::uint32_t seq, bool ok, std::string value) = 0;
  // Ends the execution with kind `cancelled` (if it has not ended). Thread-safe.
  virtual void cancel() = 0;
  // A copy of the journal so far. Thread-safe.
  virtual Journal journal() const = 0;
};

class Pool {
 public:
  // Spawns the workers and waits (up to `ready_timeout`) until each has warmed up. Call it
  // from a thread that lives as long as the pool (the main thread, say): a worker dies
  // with the *thread* that spawned it (PR_SET_PDEATHSIG is per thread), so a pool created
  // on a short-lived thread loses its first workers when that thread ends (they are
  // replaced, but executions they held fail). Replacements are spawned by the pool thread.
  static Result<std::unique_ptr<Pool>> create(PoolOptions options,
                                              std::chrono::milliseconds ready_timeout = std::chrono::seconds(30));
  virtual ~Pool() = default;

  // Queues an execution. Fails (and runs nothing) on invalid limits, a source over 1 MiB,
  // a journal that is not well-formed, or a full queue.
  virtual Result<std::shared_ptr<Execution>> start(ExecutionRequest request,
                                                   std::shared_ptr<ExecutionObserver> observer) = 0;

  struct Stats {
    unsigned workers_ready = 0;
    unsigned slots = 0;  // executions the ready workers can run at once
    std::size_t running = 0;
    std::size_t queued = 0;
    std::size_t warming = 0;  // free slots still making the context their next execution gets
    std::uint64_t workers_spawned = 0;
    std::uint64_t workers_lost = 0;  // died or were killed, recycling excluded
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    // `failed` by kind, indexed by the kind's wire value (entry 0 is unused).
    std::array<std::uint64_t, kLastFailureKind + 1> failed_by_kind{};
  };
  virtual Stats stats() const = 0;
  // Process ids of the live workers (tests kill one; operators look at them).
  virtual std::vector<pid_t> worker_pids() const = 0;
  // The worker running `execution`, if it is running.
  virtual std::optional<pid_t> worker_of(const Execution& execution) const = 0;
  // Re-reads the clock (after a VirtualClock moved) to fire due timers.
  virtual void poke() = 0;
};

}  // namespace dorm::engine
