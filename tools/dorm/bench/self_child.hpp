// A benchmark step that must run in a process of its own (a fresh heap to measure, a
// process to SIGKILL): this binary started again with other arguments, its stdout read
// through a pipe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dorm::bench {

class SelfChild {
 public:
  // Starts /proc/self/exe with `args` (argv[1] on). Throws std::runtime_error, naming
  // `what`, if it cannot start.
  SelfChild(const std::vector<std::string>& args, std::string what);
  // SIGKILLs the child if it still runs, and reaps it.
  ~SelfChild();
  SelfChild(const SelfChild&) = delete;
  SelfChild& operator=(const SelfChild&) = delete;

  // The next bytes the child writes; empty at end of stream.
  std::string read_some();
  // Everything the child writes, up to its end of stream.
  std::string read_all();
  // Waits for the child's exit; true if it exited with status 0.
  bool exited_cleanly();
  // SIGKILLs the child and reaps it.
  void kill();

 private:
  pid_t pid_ = 0;
  int out_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  void reap();
};

}  // namespace dorm::bench
