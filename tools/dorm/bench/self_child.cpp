#include "self_child.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace dorm::bench {

SelfChild::SelfChild(const std::vector<std::string>& args, std::string what) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  int out[2];
  if (pipe(out) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> argv{exe.data()};
  std::vector<std::string> copies = args;
  for (auto& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw std::runtime_error("cannot start the " + what + " child");
  }
  out_ = out[0];
}

SelfChild::~SelfChild() {
  if (!reaped_) kill();
  if (out_ >= 0) close(out_);
}

std::string SelfChild::read_some() {
  char buf[256];
  ssize_t got = read(out_, buf, sizeof buf);
  return got > 0 ? std::string(buf, static_cast<std::size_t>(got)) : std::string();
}

std::string SelfChild::read_all() {
  std::string text;
  for (std::string part; !(part = read_some()).empty();) text += part;
  return text;
}

bool SelfChild::exited_cleanly() {
  reap();
  return WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

void SelfChild::kill() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  reap();
}

void SelfChild::reap() {
  if (reaped_) return;
  waitpid(pid_, &status_, 0);
  reaped_ = true;
}

}  // namespace dorm::bench
