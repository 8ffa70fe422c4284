#include "worker_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

extern char** environ;

namespace dorm::engine {
namespace {
constexpr int kFirstFd = 3;  // the control socket; slot sockets follow
}  // namespace

Result<WorkerProcess> spawn_worker_process(const WorkerCommand& command) {
  // pairs[0] is the control socket, pairs[1 + i] slot i's.
  std::vector<std::array<int, 2>> pairs;
  auto close_all = [&](bool host_ends) {
    for (auto& pair : pairs) {
      if (host_ends && pair[0] >= 0) close(pair[0]);
      if (pair[1] >= 0) close(pair[1]);
    }
  };
  for (unsigned i = 0; i <= command.slots; ++i) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      int error = errno;
      close_all(true);
      return Error{ErrorCode::io_error, std::string("socketpair: ") + std::strerror(error)};
    }
    // The child's ends are dup2'ed onto 3, 4, ...: keep them above that range first, so no
    // dup2 overwrites an end still to be placed (and none keeps CLOEXEC by being dup2'ed
    // onto its own number).
    int moved = fcntl(pair[1], F_DUPFD_CLOEXEC, kFirstFd + 1 + static_cast<int>(command.slots));
    close(pair[1]);
    pairs.push_back({pair[0], moved});
    if (moved < 0) {
      int error = errno;
      close_all(true);
      return Error{ErrorCode::io_error, std::string("fcntl: ") + std::strerror(error)};
    }
  }
  // Moved above the sockets' range for the same reason as their ends.
  const int snapshot_at = kFirstFd + 1 + static_cast<int>(command.slots);
  int snapshot_copy = -1;
  if (command.snapshot_fd >= 0) {
    snapshot_copy = fcntl(command.snapshot_fd, F_DUPFD_CLOEXEC, snapshot_at + 1);
    if (snapshot_copy < 0) {
      int error = errno;
      close_all(true);
      return Error{ErrorCode::io_error, std::string("fcntl: ") + std::strerror(error)};
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (!command.keep_stderr) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, pairs[i][1], kFirstFd + static_cast<int>(i));
  }
  std::vector<std::string> args = {command.path,
                                   "--fd",
                                   std::to_string(kFirstFd),
                                   "--slots",
                                   std::to_string(command.slots),
                                   "--poll-us",
                                   std::to_string(command.poll_budget.count())};
  if (command.idle_trim.count() > 0) {
    args.insert(args.end(), {"--idle-trim-ms", std::to_string(command.idle_trim.count())});
  }
  if (snapshot_copy >= 0) {
    posix_spawn_file_actions_adddup2(&actions, snapshot_copy, snapshot_at);
    args.insert(args.end(), {"--snapshot-fd", std::to_string(snapshot_at)});
  }
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
  close_all(rc != 0);
  if (snapshot_copy >= 0) close(snapshot_copy);
  if (rc != 0) {
    return Error{ErrorCode::io_error, "cannot start the engine worker '" + command.path +
                                          "': " + std::strerror(rc)};
  }
  WorkerProcess process;
  process.pid = pid;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    int fd = pairs[i][0];
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (i == 0) {
      process.fd = fd;
    } else {
      process.slot_fds.push_back(fd);
    }
  }
  return process;
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
