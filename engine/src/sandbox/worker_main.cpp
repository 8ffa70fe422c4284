// dorm-engine-worker: the process that runs `execute` code (docs/engine.md).
//
// The server spawns it with one end of a socketpair as fd 3 and nothing else open (stderr
// only when the pool is told to keep it, for debugging). It locks itself down in this
// order, each step before any untrusted byte arrives: other fds closed, no new privileges,
// not dumpable, dies with its parent, rlimits; V8 and every slot's isolate warmed up; the
// seccomp filter on every thread. Then it says `ready` and serves frames until the socket
// closes. Any malformed frame ends the process: the host never sends one, so one means the
// stream is not what it seems.
#include <CLI/CLI.hpp>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "channel.hpp"
#include "seccomp_filter.hpp"
#include "slot.hpp"
#include "time_platform.hpp"

namespace dorm::engine::sandbox {
namespace {

// V8 flags: no WebAssembly (its memory bypasses the ArrayBuffer allocator), no shared
// memory or Atomics (nothing to share, and Atomics.wait blocks a slot), no natives syntax.
constexpr const char* kV8Flags =
    "--no-expose-wasm --no-harmony-sharedarraybuffer --no-harmony-atomics "
    "--no-allow-natives-syntax --no-expose-gc";

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

void set_limit(int resource, rlim_t value) {
  rlimit limit{value, value};
  setrlimit(resource, &limit);
}

class Worker {
 public:
  Worker(Channel& channel, v8::Platform& platform, int slots) : channel_(channel) {
    StartupSnapshot* snapshot = startup_snapshot();
    for (int i = 0; i < slots; ++i) {
      slots_.push_back(std::make_unique<Slot>(channel, platform, prepared_, snapshot,
                                              [this](std::uint64_t exec) { free(exec); }));
    }
  }

  // Slots warm up in parallel; this returns once all are warm.
  void start() {
    for (auto& slot : slots_) slot->start();
    for (auto& slot : slots_) slot->wait_warm();
    watchdog_ = std::thread([this] { watch(); });
  }

  // Reads frames until the host closes the socket.
  [[noreturn]] void serve() {
    wire::FrameReader reader;
    std::vector<char> buffer(1 << 16);
    for (;;) {
      ssize_t n = ::read(channel_.fd(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);
      reader.feed(buffer.data(), static_cast<std::size_t>(n));
      for (;;) {
        auto next = reader.next();
        if (!next) fatal(next.error().message);
        if (!next->has_frame) break;
        auto message = wire::decode(next->body);
        if (!message) fatal(message.error().message);
        dispatch(std::move(*message));
      }
    }
  }

 private:
  [[noreturn]] static void fatal(const std::string& why) {
    std::fprintf(stderr, "dorm-engine-worker: %s\n", why.c_str());
    _exit(2);
  }

  void dispatch(wire::Message message) {
    if (auto* start = std::get_if<wire::Start>(&message)) {
      Slot* slot = nullptr;
      {
        std::lock_guard lock(mutex_);
        if (routes_.count(start->exec) == 0) {
          // A free slot whose next context is already warm starts at once; a free slot still
          // warming up (it just finished an execution) only after that.
          for (auto& s : slots_) {
            bool taken = false;
            for (auto& [exec, owner] : routes_) taken = taken || owner == s.get();
            if (taken) continue;
            if (slot == nullptr || (!slot->warm() && s->warm())) slot = s.get();
            if (slot->warm()) break;
          }
          if (slot != nullptr) routes_[start->exec] = slot;
        }
      }
      if (slot == nullptr) {
        channel_.send(wire::Failed{start->exec, FailureKind::engine_overloaded,
                                   "the engine worker has no free slot"});
        return;
      }
      slot->post(std::move(*start));
      cv_.notify_all();
    } else if (auto* ping = std::get_if<wire::Ping>(&message)) {
      channel_.send(wire::Pong{ping->nonce});
    } else {
      std::uint64_t exec = std::visit(
          [](const auto& m) -> std::uint64_t {
            using T = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<T, wire::ToolResult> || std::is_same_v<T, wire::TimerFired> ||
                          std::is_same_v<T, wire::Cancel>) {
              return m.exec;
            } else {
              fatal("the host sent a worker-to-host frame");
            }
          },
          message);
      Slot* slot = nullptr;
      {
        std::lock_guard lock(mutex_);
        auto route = routes_.find(exec);
        if (route != routes_.end()) slot = route->second;
      }
      if (slot == nullptr) return;  // the execution already ended
      std::visit(
          [&](auto&& m) {
            using T = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<T, wire::ToolResult> || std::is_same_v<T, wire::TimerFired> ||
                          std::is_same_v<T, wire::Cancel>) {
              slot->post(std::move(m));
            }
          },
          std::move(message));
    }
  }

  void free(std::uint64_t exec) {
    std::lock_guard lock(mutex_);
    routes_.erase(exec);
  }

  // Checks CPU and wall limits every few milliseconds while anything runs; sleeps otherwise.
  void watch() {
    for (;;) {
      bool any = false;
      auto now = std::chrono::steady_clock::now();
      for (auto& slot : slots_) any = slot->check_limits(now) || any;
      std::unique_lock lock(mutex_);
      if (any || !routes_.empty()) {
        cv_.wait_for(lock, std::chrono::milliseconds(5));
      } else {
        cv_.wait(lock, [&] { return !routes_.empty(); });
      }
    }
  }

  Channel& channel_;
  PreparedCache prepared_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::unordered_map<std::uint64_t, Slot*> routes_;
  std::thread watchdog_;
};

// Diagnostics for tests: after the full lockdown, make one system call and report.
[[noreturn]] void probe(const std::string& call) {
  if (call == "socket") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    std::printf("socket returned %d\n", fd);
  } else if (call == "openat") {
    FILE* f = std::fopen("/etc/hostname", "r");
    std::printf("openat %s errno %d\n", f ? "succeeded" : "failed", errno);
  } else if (call == "execve") {
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execve("/bin/true", argv, nullptr);
    std::printf("execve failed errno %d\n", errno);
  } else if (call == "fork") {
    pid_t pid = static_cast<pid_t>(syscall(SYS_fork));
    std::printf("fork returned %d\n", pid);
  } else {
    std::printf("unknown probe %s\n", call.c_str());
  }
  std::fflush(stdout);
  _exit(0);
}

}  // namespace
}  // namespace dorm::engine::sandbox

int main(int argc, char** argv) {
  using namespace dorm::engine::sandbox;
  CLI::App app{"dorm-engine-worker: runs `execute` code for a dorm server, in V8 isolates behind a "
               "seccomp filter. Started by the server's engine pool, not by hand."};
  int fd = 3;
  int slots = 2;
  std::uint64_t address_space_mb = 0;
  std::string probe_call;
  app.add_option("--fd", fd, "the socket to the host")->capture_default_str();
  app.add_option("--slots", slots, "executions run at once")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--address-space-mb", address_space_mb,
                 "RLIMIT_AS in MiB (0: none; always none under AddressSanitizer)");
  app.add_option("--probe-syscall", probe_call,
                 "diagnostics: lock down without a host, make this call (socket, openat, execve, "
                 "fork) and report; a forbidden one kills the process with SIGSYS");
  CLI11_PARSE(app, argc, argv);

  bool probing = !probe_call.empty();
  // Nothing open but stdio (which the pool points at /dev/null, or stderr when it keeps it)
  // and the socket.
  if (!probing) {
    if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
    ::close_range(static_cast<unsigned>(fd) + 1, ~0u, 0);
  }
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (!probing && getppid() == 1) _exit(0);  // the host died before we could watch it
  set_limit(RLIMIT_CORE, 0);
  set_limit(RLIMIT_FSIZE, 0);
  if (address_space_mb > 0 && !kSanitized) set_limit(RLIMIT_AS, address_space_mb << 20);

  v8::Platform& platform = init_v8_with_host_time(kV8Flags);
  Channel channel(fd);
  static Worker worker(channel, platform, slots);
  worker.start();
  set_limit(RLIMIT_NOFILE, static_cast<rlim_t>(fd) + 1);
  if (!install_seccomp_filter()) {
    std::fprintf(stderr, "dorm-engine-worker: the kernel refused the seccomp filter\n");
    _exit(3);
  }
  if (probing) probe(probe_call);
  channel.send(dorm::engine::wire::Ready{static_cast<std::uint32_t>(slots)});
  worker.serve();
}
