#include "worker_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

extern char** environ;

namespace dorm::engine {

Result<WorkerProcess> spawn_worker_process(const WorkerCommand& command) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return Error{ErrorCode::io_error, std::string("socketpair: ") + std::strerror(errno)};
  }
  // dup2 onto the same number would keep CLOEXEC: make sure the child's end is not fd 3.
  if (pair[1] == 3) {
    int moved = fcntl(pair[1], F_DUPFD_CLOEXEC, 10);
    close(pair[1]);
    pair[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (!command.keep_stderr) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
  std::vector<std::string> args = {command.path, "--fd", "3", "--slots",
                                   std::to_string(command.slots)};
  if (command.address_space_mb > 0) {
    args.insert(args.end(), {"--address-space-mb", std::to_string(command.address_space_mb)});
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The worker gets no environment but the sanitizer settings of the test build.
  std::vector<char*> envp;
  for (char** v = environ; v != nullptr && *v != nullptr; ++v) {
    std::string_view var(*v);
    if (var.starts_with("ASAN_OPTIONS=") || var.starts_with("UBSAN_OPTIONS=") ||
        var.starts_with("LSAN_OPTIONS=")) {
      envp.push_back(*v);
    }
  }
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, command.path.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pair[1]);
  if (rc != 0) {
    close(pair[0]);
    return Error{ErrorCode::io_error, "cannot start the engine worker '" + command.path +
                                          "': " + std::strerror(rc)};
  }
  fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK);
  return WorkerProcess{pid, pair[0]};
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

}  // namespace dorm::engine
