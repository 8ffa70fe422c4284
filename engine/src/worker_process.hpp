// Starting a dorm-engine-worker process: the host's half of the sandbox's first steps
// (docs/engine.md, "Isolation model").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "dorm/result.hpp"

namespace dorm::engine {

struct WorkerCommand {
  std::string path;                  // the dorm-engine-worker executable
  unsigned slots = 1;                // --slots
  std::uint64_t address_space_mb = 0;  // --address-space-mb (0: none)
  bool keep_stderr = false;          // otherwise stderr is /dev/null
};

struct WorkerProcess {
  pid_t pid = -1;
  int fd = -1;  // the host's end of the socketpair, non-blocking, close-on-exec
};

// Spawns the worker with its end of a fresh socketpair as fd 3, stdin and stdout (and
// stderr unless kept) on /dev/null, and no environment but the sanitizer settings of a
// test build. Nothing else of this process is inherited: every other fd is close-on-exec,
// and the worker closes whatever is left before it reads a frame.
Result<WorkerProcess> spawn_worker_process(const WorkerCommand& command);

// "killed by signal 31 (SIGSYS)", "exited with status 70": a waitpid status for logs.
std::string describe_status(int status);

}  // namespace dorm::engine
