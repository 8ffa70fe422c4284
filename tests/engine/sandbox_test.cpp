// The sandbox, tried as hostile code and as an unlucky operator would: escape attempts from
// inside an execution, a worker killed mid-execution, the seccomp filter, and a worker that
// breaks the protocol. Every case runs against real dorm-engine-worker processes.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "dorm/engine/pool.hpp"
#include "engine_harness.hpp"

using namespace dorm::engine;
using dorm::engine::testing::Recorder;

namespace {

std::unique_ptr<Pool> make_pool(unsigned workers, unsigned slots, std::string worker = DORM_ENGINE_WORKER) {
  PoolOptions options;
  options.worker_path = std::move(worker);
  options.workers = workers;
  options.slots_per_worker = slots;
  options.keep_worker_stderr = true;
  auto created = Pool::create(options);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().describe()));
  return std::move(*created);
}

Limits limits() {
  Limits l;
  l.heap_bytes = 32ull << 20;
  l.cpu_ms = 1'000;
  l.wall_ms = 10'000;
  return l;
}

std::shared_ptr<Recorder> run(Pool& pool, const std::string& source, Limits l = limits()) {
  auto rec = std::make_shared<Recorder>([](const ToolCallEntry&) {
    return std::make_optional(std::make_pair(true, std::string("{}")));
  });
  auto started = pool.start(ExecutionRequest{"sandbox", source, l, {}}, rec);
  REQUIRE(started.ok());
  rec->attach(*started);
  REQUIRE(rec->wait_done());
  return rec;
}

std::string result(Pool& pool, const std::string& source) {
  auto rec = run(pool, source);
  INFO((rec->failure ? rec->failure->second : ""));
  REQUIRE(rec->result);
  return *rec->result;
}

// Runs the worker binary with --probe-syscall and returns its wait status and output. The
// output goes through a pipe: the worker's RLIMIT_FSIZE of 0 forbids writing a file.
std::pair<int, std::string> probe(const std::string& call) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::string worker = DORM_ENGINE_WORKER;
  std::string flag = "--probe-syscall";
  char* argv[] = {worker.data(), flag.data(), const_cast<char*>(call.c_str()), nullptr};
  pid_t pid = -1;
  int spawned = posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  REQUIRE(spawned == 0);
  std::string text;
  char buffer[4096];
  // The probe ends in well under a second; 30 s bounds a stuck one on a loaded machine.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    pollfd readable{pipe_fds[0], POLLIN, 0};
    if (poll(&readable, 1, 100) == 0) {
      if (std::chrono::steady_clock::now() > deadline) break;
      continue;
    }
    ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("the probe did not finish");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {status, text};
}

}  // namespace

TEST_CASE("sandbox: no process, require, modules, WebAssembly or shared memory") {
  auto pool = make_pool(1, 1);
  CHECK(result(*pool, "return [typeof process, typeof require, typeof module, typeof WebAssembly, "
                      "typeof SharedArrayBuffer, typeof Atomics, typeof gc, typeof d8]") ==
        R"(["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"])");
  std::string imported = result(*pool, "try { await import('fs'); return 'imported' } catch (e) { return e.message }");
  CHECK(imported.find("not available in dorm's engine") != std::string::npos);
  // %-natives syntax is off: it does not even parse.
  CHECK(run(*pool, "return %GetOptimizationStatus(() => 1)")->failure_kind() == FailureKind::syntax_error);
}

TEST_CASE("sandbox: eval and new Function run inside the same limits") {
  auto pool = make_pool(1, 1);
  CHECK(result(*pool, "return eval('1 + 1') + new Function('return 40')()") == "42");
  auto rec = run(*pool, "while (true) new Function('return 1')()");
  CHECK(rec->failure_kind() == FailureKind::cpu_limit);
}

TEST_CASE("sandbox: prototype pollution does not leak into the next execution") {
  auto pool = make_pool(1, 1);  // one slot: the next execution runs in the same isolate
  result(*pool,
         "Object.prototype.polluted = 'yes'; Array.prototype.push = null; JSON.stringify = () => 'owned';"
         "globalThis.leftover = 1; return 0");
  CHECK(result(*pool, "return [({}).polluted, typeof [].push, JSON.stringify({a: 1}), typeof leftover]") ==
        R"([null,"function","{\"a\":1}","undefined"])");
}

TEST_CASE("sandbox: a script that breaks the builtins it was given cannot break the bridge") {
  auto pool = make_pool(1, 1);
  CHECK(result(*pool,
               "JSON.parse = () => 'forged'; JSON.stringify = () => '{}'; Array.prototype.join = null;"
               "const r = await tools.x({a: 1}); console.log('still', 'logging'); return typeof r") == R"("object")");
}

TEST_CASE("sandbox: a worker killed mid-execution fails exactly its executions") {
  auto pool = make_pool(2, 1);
  auto a = std::make_shared<Recorder>();
  auto b = std::make_shared<Recorder>();
  auto ea = pool->start(ExecutionRequest{"a", "await tools.hold(); return 'a'", limits(), {}}, a);
  auto eb = pool->start(ExecutionRequest{"b", "await tools.hold(); return 'b'", limits(), {}}, b);
  REQUIRE(ea.ok());
  REQUIRE(eb.ok());
  REQUIRE(a->wait_calls(1));
  REQUIRE(b->wait_calls(1));
  auto pa = pool->worker_of(**ea);
  auto pb = pool->worker_of(**eb);
  REQUIRE(pa);
  REQUIRE(pb);
  REQUIRE(*pa != *pb);
  REQUIRE(kill(*pa, SIGKILL) == 0);
  REQUIRE(a->wait_done());
  CHECK(a->failure_kind() == FailureKind::engine_crashed);
  CHECK(a->failure->second.find("SIGKILL") != std::string::npos);
  (*eb)->deliver_tool_result(1, true, "{}");
  REQUIRE(b->wait_done());
  CHECK(b->result == std::optional<std::string>(R"("b")"));
  // The pool replaces the dead worker and keeps serving.
  CHECK(result(*pool, "return 'after'") == R"("after")");
  CHECK(pool->stats().workers_lost == 1);
}

TEST_CASE("sandbox: a worker that dies on V8's fatal OOM path costs only that worker") {
  auto pool = make_pool(1, 1);
  Limits l = limits();
  l.heap_bytes = 16ull << 20;
  l.cpu_ms = 60'000;  // the fill runs for seconds in a sanitizer build on a loaded machine
  // A single huge allocation that the near-heap-limit callback cannot stop.
  auto rec = run(*pool, "const a = new Array(5e7).fill(1.5); return a.length", l);
  REQUIRE(rec->failure);
  INFO("failure: " << to_string(rec->failure->first) << ": " << rec->failure->second);
  bool contained = rec->failure->first == FailureKind::memory_limit || rec->failure->first == FailureKind::engine_crashed;
  CHECK(contained);
  CHECK(result(*pool, "return 'alive'") == R"("alive")");
}

TEST_CASE("sandbox: V8 takes the worker's flags without a word on stderr") {
  // A flag V8 refuses is reported on stderr, which kills a worker whose stderr is a file
  // (RLIMIT_FSIZE 0: SIGXFSZ) and leaves the flag unset. The hash seed is random per worker
  // and V8 10.2 refused half of all values once: a dozen starts catch that with
  // probability 1 - 2^-12.
  for (int i = 0; i < 12; ++i) {
    auto [status, out] = probe("nothing");
    CHECK(WIFEXITED(status));
    CHECK(out == "unknown probe nothing\n");
  }
}

TEST_CASE("sandbox: the seccomp filter is active after start-up") {
  SUBCASE("a network socket kills the worker") {
    auto [status, out] = probe("socket");
    INFO(out);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSYS);
  }
  SUBCASE("starting a program kills the worker") {
    auto [status, out] = probe("execve");
    INFO(out);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSYS);
  }
  SUBCASE("forking kills the worker") {
    auto [status, out] = probe("fork");
    INFO(out);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSYS);
  }
  SUBCASE("opening a file fails without opening it") {
    auto [status, out] = probe("openat");
    CHECK(WIFEXITED(status));
    CHECK(out.find("openat failed errno 13") != std::string::npos);
  }
}

TEST_CASE("sandbox: a worker that breaks the protocol is killed and its executions fail") {
  // A fake worker: says ready, waits for a start, then answers with a frame for an execution
  // it was never given.
  auto dir = std::filesystem::temp_directory_path() / ("dorm-fake-worker-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto script = dir / "worker.sh";
  {
    std::ofstream out(script);
    out << "#!/bin/bash\n"
           "printf '\\x05\\x00\\x00\\x00\\x10\\x01\\x00\\x00\\x00' >&3\n"
           "head -c 4 <&4 >/dev/null\n"  // a start, on its one slot's socket
           "printf '\\x09\\x00\\x00\\x00\\x18\\x63\\x00\\x00\\x00\\x00\\x00\\x00\\x00' >&3\n"   // a pong: fine
           "printf '\\x0d\\x00\\x00\\x00\\x16\\x63\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00' >&3\n"
           "exec sleep 30\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto pool = make_pool(1, 1, script.string());
  auto rec = std::make_shared<Recorder>();
  auto started = pool->start(ExecutionRequest{"victim", "return 1", limits(), {}}, rec);
  REQUIRE(started.ok());
  REQUIRE(rec->wait_done());
  CHECK(rec->failure_kind() == FailureKind::engine_crashed);
  CHECK(rec->failure->second.find("broke the engine protocol") != std::string::npos);
  CHECK(pool->stats().workers_lost >= 1);
  pool.reset();
  std::filesystem::remove_all(dir);
}

// A fake worker with two slots: says ready, waits for the first start on slot 0's socket
// (fd 4), then answers `1` for it (execution handle 1) on the socket of `answer_slot`.
std::filesystem::path fake_two_slot_worker(const std::filesystem::path& dir, int answer_slot) {
  std::filesystem::create_directories(dir);
  auto script = dir / "worker.sh";
  std::ofstream out(script);
  out << "#!/bin/bash\n"
         "printf '\\x05\\x00\\x00\\x00\\x10\\x02\\x00\\x00\\x00' >&3\n"
         "head -c 4 <&4 >/dev/null\n"
         "printf '\\x0e\\x00\\x00\\x00\\x16\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x31' >&"
      << 4 + answer_slot << "\n"
      << "exec sleep 30\n";
  out.close();
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script;
}

TEST_CASE("sandbox: a slot speaks only for the execution it runs") {
  auto dir = std::filesystem::temp_directory_path() / ("dorm-fake-slots-" + std::to_string(getpid()));
  SUBCASE("on its own socket the answer counts") {
    auto pool = make_pool(1, 2, fake_two_slot_worker(dir, 0).string());
    auto rec = std::make_shared<Recorder>();
    REQUIRE(pool->start(ExecutionRequest{"mine", "return 1", limits(), {}}, rec).ok());
    REQUIRE(rec->wait_done());
    CHECK(rec->result == std::optional<std::string>("1"));
    CHECK(pool->stats().workers_lost == 0);
  }
  SUBCASE("on another slot's socket it is a protocol violation") {
    auto pool = make_pool(1, 2, fake_two_slot_worker(dir, 1).string());
    auto rec = std::make_shared<Recorder>();
    REQUIRE(pool->start(ExecutionRequest{"victim", "return 1", limits(), {}}, rec).ok());
    REQUIRE(rec->wait_done());
    CHECK(rec->failure_kind() == FailureKind::engine_crashed);
    CHECK(rec->failure->second.find("broke the engine protocol") != std::string::npos);
    CHECK(pool->stats().workers_lost >= 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("sandbox: a result nested deeper than the host allows is a protocol violation, not a host crash") {
  // A fake worker answers its one execution (handle 1) with valid JSON nested `depth` deep.
  // The host checks it without recursion and refuses it past kMaxJsonDepth (1,000); at
  // 200,000 levels a recursive check would overflow the pool thread's stack.
  auto dir = std::filesystem::temp_directory_path() / ("dorm-fake-deep-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto answer = [&](std::size_t depth) {
    std::string json = std::string(depth, '[') + std::string(depth, ']');
    std::string body;
    body += '\x16';                                        // completed
    body += std::string("\x01\x00\x00\x00\x00\x00\x00\x00", 8);  // execution handle 1
    auto le32 = [](std::uint32_t v) {
      std::string out(4, '\0');
      for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
      return out;
    };
    body += le32(static_cast<std::uint32_t>(json.size())) + json;
    auto file = dir / ("answer-" + std::to_string(depth));
    std::ofstream(file, std::ios::binary) << le32(static_cast<std::uint32_t>(body.size())) + body;
    auto script = dir / ("worker-" + std::to_string(depth) + ".sh");
    std::ofstream(script) << "#!/bin/bash\n"
                             "printf '\\x05\\x00\\x00\\x00\\x10\\x01\\x00\\x00\\x00' >&3\n"
                             "head -c 4 <&4 >/dev/null\n"
                             "cat '" << file.string() << "' >&4\n"
                             "exec sleep 30\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    return script;
  };
  SUBCASE("1,000 levels are accepted") {
    auto pool = make_pool(1, 1, answer(1000).string());
    auto rec = std::make_shared<Recorder>();
    REQUIRE(pool->start(ExecutionRequest{"deep", "return 1", limits(), {}}, rec).ok());
    REQUIRE(rec->wait_done());
    REQUIRE(rec->result);
    CHECK(rec->result->size() == 2000);
    CHECK(pool->stats().workers_lost == 0);
  }
  SUBCASE("200,000 levels kill the worker; the host lives") {
    auto pool = make_pool(1, 1, answer(200'000).string());
    auto rec = std::make_shared<Recorder>();
    REQUIRE(pool->start(ExecutionRequest{"deeper", "return 1", limits(), {}}, rec).ok());
    REQUIRE(rec->wait_done());
    CHECK(rec->failure_kind() == FailureKind::engine_crashed);
    CHECK(rec->failure->second.find("broke the engine protocol") != std::string::npos);
    CHECK(pool->stats().workers_lost >= 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("sandbox: starts queued for a lone slot all run, each in a fresh context") {
  // One slot: each start after the first is sent the moment the previous outcome arrives,
  // to a slot that is free but may still be making its next context. It must run once
  // that context is made, never be dropped, and never see the previous execution's globals.
  PoolOptions options;
  options.worker_path = DORM_ENGINE_WORKER;
  options.workers = 1;
  options.slots_per_worker = 1;
  auto created = Pool::create(options);
  REQUIRE(created.ok());
  auto& pool = **created;
  std::vector<std::shared_ptr<Recorder>> runs;
  for (int i = 0; i < 12; ++i) {
    auto rec = std::make_shared<Recorder>(nullptr);
    std::string source = "globalThis.seen = (globalThis.seen ?? 0) + 1; return [seen, " + std::to_string(i) + "]";
    auto started = pool.start(ExecutionRequest{"queued-" + std::to_string(i), source, Limits{}, {}}, rec);
    REQUIRE(started.ok());
    rec->attach(*started);
    runs.push_back(rec);
  }
  for (int i = 0; i < 12; ++i) {
    REQUIRE(runs[i]->wait_done());
    INFO((runs[i]->failure ? runs[i]->failure->second : ""));
    REQUIRE(runs[i]->result);
    CHECK(*runs[i]->result == "[1," + std::to_string(i) + "]");
  }
  CHECK(pool.stats().completed == 12);
  CHECK(pool.stats().workers_lost == 0);
}

TEST_CASE("sandbox: workers are recycled after their quota of executions") {
  PoolOptions options;
  options.worker_path = DORM_ENGINE_WORKER;
  options.workers = 1;
  options.slots_per_worker = 1;
  options.recycle_after = 3;
  auto created = Pool::create(options);
  REQUIRE(created.ok());
  auto& pool = **created;
  auto first = pool.worker_pids();
  for (int i = 0; i < 7; ++i) CHECK(result(pool, "return " + std::to_string(i)) == std::to_string(i));
  CHECK(pool.stats().workers_spawned >= 3);
  CHECK(pool.stats().workers_lost == 0);
  CHECK(pool.worker_pids() != first);
}

namespace {

std::string cmdline_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

// A fresh context as its code sees it: the globals, what a hash-keyed lookup gives, and
// source preparation (TypeScript) — with a tool call held open in the middle, so the test
// can tell which worker runs it.
constexpr const char* kFingerprint =
    "```ts\n"
    "const names: string[] = Object.getOwnPropertyNames(globalThis).sort();\n"
    "const table: Record<string, number> = {};\n"
    "for (let i = 0; i < 300; i++) table['k' + (i * 7919) % 1000] = i;\n"
    "await tools.hold();\n"
    "return [names.join(','), Object.keys(table).length, table.k919, typeof tools.x.y];\n"
    "```";

// Runs kFingerprint; its result and the command line of the worker that ran it.
std::pair<std::string, std::string> fingerprint(Pool& pool) {
  auto rec = std::make_shared<Recorder>();
  auto started = pool.start(ExecutionRequest{"fingerprint", kFingerprint, limits(), {}}, rec);
  REQUIRE(started.ok());
  rec->attach(*started);
  REQUIRE(rec->wait_calls(1));
  auto pid = pool.worker_of(**started);
  REQUIRE(pid.has_value());
  std::string cmdline = cmdline_of(*pid);
  (*started)->deliver_tool_result(1, true, "{}");
  REQUIRE(rec->wait_done());
  INFO((rec->failure ? rec->failure->second : ""));
  REQUIRE(rec->result);
  return {*rec->result, cmdline};
}

dorm::Result<std::unique_ptr<Pool>> recycling_pool(std::string worker) {
  PoolOptions options;
  options.worker_path = std::move(worker);
  options.workers = 1;
  options.slots_per_worker = 1;
  options.recycle_after = 1;  // a new worker for every execution
  options.keep_worker_stderr = true;
  return Pool::create(options);
}

}  // namespace

TEST_CASE("sandbox: workers started after the first take its startup snapshot and run code alike") {
  auto created = recycling_pool(DORM_ENGINE_WORKER);
  REQUIRE(created.ok());
  Pool& pool = **created;
  auto [first, first_command] = fingerprint(pool);
  CHECK(first.find("Object,") != std::string::npos);
  CHECK(first_command.find("--snapshot-fd") == std::string::npos);
  for (int i = 0; i < 2; ++i) {
    auto [later, later_command] = fingerprint(pool);
    CHECK(later_command.find("--snapshot-fd") != std::string::npos);
    CHECK(later == first);
  }
  CHECK(pool.stats().workers_spawned >= 3);
  CHECK(pool.stats().workers_lost == 0);
}

TEST_CASE("sandbox: a worker that dies starting from the shared snapshot makes the pool drop it") {
  // The real worker, except that the first one handed the pool's snapshot finds /dev/null
  // in its place (and exits before its ready).
  auto dir = std::filesystem::temp_directory_path() / ("dorm-snapshot-worker-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto script = dir / "worker.sh";
  auto marker = dir / "broke-one";
  {
    std::ofstream out(script);
    out << "#!/bin/bash\n"
           "for ((i = 1; i <= $#; i++)); do\n"
           "  if [[ ${!i} == --snapshot-fd && ! -e '" << marker.string() << "' ]]; then\n"
           "    : > '" << marker.string() << "'\n"
           "    j=$((i + 1))\n"
           "    eval \"exec ${!j}</dev/null\"\n"
           "  fi\n"
           "done\n"
           "exec '" << DORM_ENGINE_WORKER << "' \"$@\"\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  {
    auto created = recycling_pool(script.string());
    REQUIRE(created.ok());
    Pool& pool = **created;
    auto [first, first_command] = fingerprint(pool);
    // The next worker is handed the snapshot and dies; the one after it makes its own.
    auto [second, second_command] = fingerprint(pool);
    CHECK(std::filesystem::exists(marker));
    CHECK(second_command.find("--snapshot-fd") == std::string::npos);
    CHECK(second == first);
    CHECK(pool.stats().workers_lost == 1);
    // ... and shares it: the one after that starts from it.
    auto [third, third_command] = fingerprint(pool);
    CHECK(third_command.find("--snapshot-fd") != std::string::npos);
    CHECK(third == first);
    CHECK(pool.stats().workers_lost == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("sandbox: executions outlive their pool safely and hear why they ended") {
  auto pool = make_pool(1, 1);
  auto rec = std::make_shared<Recorder>();
  auto started = pool->start(ExecutionRequest{"orphan", "await tools.hold(); return 1", limits(), {}}, rec);
  REQUIRE(started.ok());
  std::shared_ptr<Execution> exec = *started;
  REQUIRE(rec->wait_calls(1));
  pool.reset();
  REQUIRE(rec->wait_done(std::chrono::seconds(1)));
  CHECK(rec->failure_kind() == FailureKind::engine_crashed);
  CHECK(rec->failure->second.find("shut down") != std::string::npos);
  // The owner still holds the execution: talking to it now does nothing, safely.
  exec->deliver_tool_result(1, true, "{}");
  exec->cancel();
  CHECK(exec->journal().entries.size() == 1);
  CHECK(rec->endings == 1);
}
