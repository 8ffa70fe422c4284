// Starting a dorm-engine-worker process: the host's half of the sandbox's first steps
// (docs/engine.md, "Isolation model").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "dorm/engine/poll_before_sleep.hpp"
#include "dorm/result.hpp"

namespace dorm::engine {

struct WorkerCommand {
  std::string path;                  // the dorm-engine-worker executable
  unsigned slots = 1;                // --slots
  std::uint64_t address_space_mb = 0;  // --address-space-mb (0: none)
  bool keep_stderr = false;          // otherwise stderr is /dev/null
  std::chrono::microseconds poll_budget = PollBeforeSleep::kDefaultBudget;  // --poll-us
  std::chrono::milliseconds idle_trim{0};  // --idle-trim-ms
  int snapshot_fd = -1;  // the pool's startup snapshot, passed on as --snapshot-fd (-1: none)
};

struct WorkerProcess {
  pid_t pid = -1;
  // The host's ends of the socketpairs, non-blocking, close-on-exec: `fd` is the worker's
  // control socket (ready, heartbeats, its last words), `slot_fds[i]` slot i's socket (its
  // executions' frames, both ways).
  int fd = -1;
  std::vector<int> slot_fds;
};

// Spawns the worker with its ends of fresh socketpairs as fd 3 (control) and fds 4 … 3+slots
// (one per slot, so a slot thread reads its own frames instead of waiting for a reader
// thread to hand them over), the snapshot (if any) as fd 4+slots, stdin and stdout (and stderr unless kept) on /dev/null, and no
// environment but the sanitizer settings of a test build. Nothing else of this process is inherited: every other fd is close-on-exec,
// and the worker closes whatever is left before it reads a frame.
Result<WorkerProcess> spawn_worker_process(const WorkerCommand& command);

// "killed by signal 31 (SIGSYS)", "exited with status 70": a waitpid status for logs.
std::string describe_status(int status);

}  // namespace dorm::engine
