// dorm-engine-worker: the process that runs `execute` code (docs/engine.md).
//
// The server spawns it with one end of a socketpair as fd 3 (control: ready, heartbeats) and
// one more per slot as fds 4, 5, ... (that slot's executions), and nothing else open (stderr
// only when the pool is told to keep it, for debugging). It locks itself down in this
// order, each step before any untrusted byte arrives: other fds closed, no new privileges,
// not dumpable, dies with its parent, rlimits; V8 and every slot's isolate warmed up; the
// seccomp filter on every thread. Then it says `ready` and serves frames until the socket
// closes. Any malformed frame ends the process: the host never sends one, so one means the
// stream is not what it seems.
#include <CLI/CLI.hpp>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "channel.hpp"
#include "dorm/engine/poll_before_sleep.hpp"
#include "seccomp_filter.hpp"
#include "slot.hpp"
#include "time_platform.hpp"

namespace dorm::engine::sandbox {
namespace {

// V8 flags: no WebAssembly (its memory bypasses the ArrayBuffer allocator), and no asm.js
// validation either: it would compile "use asm" modules to WebAssembly, and while it is on,
// every new context installs V8's WebAssembly internals even with WebAssembly hidden — 18 %
// of the cost of making a context in a worker profile. asm.js code still runs, as plain
// JavaScript. No shared memory or Atomics (nothing to share, and Atomics.wait blocks a
// slot), no natives syntax.
// No incremental marking: a full collection marks the heap in one pause. Incremental
// marking spreads that work over the program's allocations to keep pauses short, which
// an execution (one short program per isolate, its results awaited as a whole) does not
// need, and it made a heap that only grows slower to reach and cross heap_bytes: a memory
// bomb took 330-415 ms to end with it, 215-265 ms without (docs/benchmarks.md, Engine).
constexpr const char* kV8Flags =
    "--no-expose-wasm --no-validate-asm --no-harmony-sharedarraybuffer --no-harmony-atomics "
    "--no-allow-natives-syntax --no-expose-gc --no-incremental-marking";

// One hash seed for every isolate of this worker, random per pool (V8's default is one per
// isolate): the pool's first worker picks it and makes the startup snapshot with it, and the
// workers started after it take both (wire::Snapshot). The snapshot's hash tables then
// already use the seed and need not be rehashed each time an isolate or a context is made
// from it: that rehashing was 5 % of a worker's CPU with executions back to back (a fresh
// context per execution). Untrusted code cannot read the seed, so it still cannot aim a
// hash-flooding input at the tables of the next executions.
//
// 63 bits: V8 10.2 parses this uint64 flag as a signed number and refuses anything from
// 2^63 up with an error on stderr (which, with the worker's RLIMIT_FSIZE of 0 and stderr a
// file, kills the worker with SIGXFSZ), leaving the seed per isolate.
constexpr std::uint64_t kHashSeedMask = ~(std::uint64_t{1} << 63);

std::uint64_t random_hash_seed() {
  std::uint64_t seed = 0;
  while (seed == 0) {
    if (::getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) _exit(72);
    seed &= kHashSeedMask;
  }
  return seed;
}

std::string v8_flags(std::uint64_t hash_seed) {
  return std::string(kV8Flags) + " --no-rehash-snapshot --hash-seed=" + std::to_string(hash_seed);
}

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

[[noreturn]] void fatal(const std::string& why) {
  std::fprintf(stderr, "dorm-engine-worker: %s\n", why.c_str());
  _exit(2);
}

void set_limit(int resource, rlim_t value) {
  rlimit limit{value, value};
  setrlimit(resource, &limit);
}

class Worker {
 public:
  // Slot i talks on fd `control_fd + 1 + i`.
  Worker(Channel& control, v8::Platform& platform, int control_fd, int slots,
         StartupSnapshot* snapshot, std::chrono::microseconds poll_budget,
         std::chrono::milliseconds idle_trim)
      : control_(control) {
    for (int i = 0; i < slots; ++i) {
      channels_.push_back(std::make_unique<Channel>(control_fd + 1 + i));
      slots_.push_back(std::make_unique<Slot>(
          *channels_.back(), platform, prepared_, snapshot, [this](bool running) { busy(running); },
          running_, poll_budget, idle_trim));
    }
  }

  // Slots warm up in parallel; this returns once all are warm. Each slot thread then reads
  // its own socket.
  void start() {
    for (auto& slot : slots_) slot->start();
    for (auto& slot : slots_) slot->wait_warm();
    watchdog_ = std::thread([this] { watch(); });
  }

  // Lets the slots read their sockets, then reads the control socket until the host closes
  // it: heartbeats only.
  [[noreturn]] void serve() {
    for (auto& slot : slots_) slot->serve();
    wire::FrameReader reader;
    std::vector<char> buffer(1 << 12);
    for (;;) {
      ssize_t n = ::read(control_.fd(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);
      reader.feed(buffer.data(), static_cast<std::size_t>(n));
      for (;;) {
        auto next = reader.next();
        if (!next) fatal(next.error().message);
        if (!next->has_frame) break;
        auto message = wire::decode(next->body);
        if (!message) fatal(message.error().message);
        auto* ping = std::get_if<wire::Ping>(&*message);
        if (ping == nullptr) fatal("the host sent something other than a ping on the control socket");
        control_.send(wire::Pong{ping->nonce});
      }
    }
  }

 private:
  void busy(bool running) {
    {
      // Changed under the lock, so the watchdog's wait below never misses it; the slots'
      // polling policy reads it without.
      std::lock_guard lock(mutex_);
      running_.fetch_add(running ? 1 : -1, std::memory_order_relaxed);
    }
    if (running) cv_.notify_all();
  }

  // Checks CPU and wall limits every few milliseconds while anything runs; sleeps otherwise.
  void watch() {
    for (;;) {
      bool any = false;
      auto now = std::chrono::steady_clock::now();
      for (auto& slot : slots_) any = slot->check_limits(now) || any;
      std::unique_lock lock(mutex_);
      if (any || running_ > 0) {
        cv_.wait_for(lock, std::chrono::milliseconds(5));
      } else {
        cv_.wait(lock, [&] { return running_ > 0; });
      }
    }
  }

  Channel& control_;
  PreparedCache prepared_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<int> running_{0};  // slots running an execution
  std::thread watchdog_;
};

// The pool's startup snapshot: a sealed memfd holding one wire::Snapshot frame body, read
// whole before the fds are closed. Any failure exits before V8 starts: the pool drops a
// snapshot whose worker died before its ready, and the next worker makes its own.
wire::Snapshot read_shared_snapshot(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0 ||
      static_cast<std::uint64_t>(st.st_size) > wire::kDefaultMaxFrame) {
    fatal("--snapshot-fd " + std::to_string(fd) + " is not a startup snapshot");
  }
  std::vector<std::uint8_t> body(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < body.size()) {
    ssize_t n = ::pread(fd, body.data() + done, body.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fatal("cannot read the startup snapshot from --snapshot-fd");
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  auto message = wire::decode(body);
  auto* snapshot = message ? std::get_if<wire::Snapshot>(&*message) : nullptr;
  if (snapshot == nullptr || (snapshot->hash_seed & ~kHashSeedMask) != 0 || snapshot->hash_seed == 0) {
    fatal("--snapshot-fd holds no startup snapshot");
  }
  return std::move(*snapshot);
}

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
  int snapshot_fd = -1;
  int slots = 2;
  std::uint64_t address_space_mb = 0;
  std::string probe_call;
  long poll_us = dorm::engine::PollBeforeSleep::kDefaultBudget.count();
  long idle_trim_ms = 0;
  app.add_option("--fd", fd, "the control socket to the host; slot i's socket is fd + 1 + i")->capture_default_str();
  app.add_option("--snapshot-fd", snapshot_fd,
                 "a startup snapshot made by another worker of the same pool (default: make one "
                 "and send it to the host before ready)");
  app.add_option("--slots", slots, "executions run at once")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--address-space-mb", address_space_mb,
                 "RLIMIT_AS in MiB (0: none; always none under AddressSanitizer)");
  app.add_option("--idle-trim-ms", idle_trim_ms,
                 "after running executions, how long a slot waits with nothing to do before it "
                 "collects its isolate's garbage and returns free memory (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0L, 600'000L));
  app.add_option("--poll-us", poll_us,
                 "how long a slot running the worker's only execution polls for a tool result "
                 "before it sleeps, in microseconds (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0L, static_cast<long>(dorm::engine::PollBeforeSleep::kMaxBudget.count())));
  app.add_option("--probe-syscall", probe_call,
                 "diagnostics: lock down without a host, make this call (socket, openat, execve, "
                 "fork) and report; a forbidden one kills the process with SIGSYS");
  CLI11_PARSE(app, argc, argv);

  bool probing = !probe_call.empty();
  std::optional<dorm::engine::wire::Snapshot> shared;
  if (snapshot_fd >= 0) shared = read_shared_snapshot(snapshot_fd);
  // Nothing open but stdio (which the pool points at /dev/null, or stderr when it keeps it)
  // and the socket.
  const int last_fd = fd + slots;  // the control socket, then one socket per slot
  if (!probing) {
    if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
    ::close_range(static_cast<unsigned>(last_fd) + 1, ~0u, 0);
  }
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (!probing && getppid() == 1) _exit(0);  // the host died before we could watch it
  set_limit(RLIMIT_CORE, 0);
  set_limit(RLIMIT_FSIZE, 0);
  if (address_space_mb > 0 && !kSanitized) set_limit(RLIMIT_AS, address_space_mb << 20);

  const std::uint64_t hash_seed = shared ? shared->hash_seed : random_hash_seed();
  v8::Platform& platform = init_v8_with_host_time(v8_flags(hash_seed).c_str());
  Channel channel(fd);
  std::unique_ptr<StartupSnapshot> snapshot =
      shared ? from_wire(std::move(*shared), Slot::bridge()) : build_startup_snapshot(Slot::bridge());
  shared.reset();
  // Made here, before any execution's byte arrived: the pool may hand it to later workers.
  if (snapshot != nullptr && snapshot_fd < 0 && !probing) channel.send(to_wire(*snapshot, hash_seed));
  static Worker worker(channel, platform, fd, slots, snapshot.release(),
                       std::chrono::microseconds(poll_us), std::chrono::milliseconds(idle_trim_ms));
  worker.start();
  set_limit(RLIMIT_NOFILE, static_cast<rlim_t>(last_fd) + 1);
  if (!install_seccomp_filter()) {
    std::fprintf(stderr, "dorm-engine-worker: the kernel refused the seccomp filter\n");
    _exit(3);
  }
  if (probing) probe(probe_call);
  channel.send(dorm::engine::wire::Ready{static_cast<std::uint32_t>(slots)});
  worker.serve();
}
