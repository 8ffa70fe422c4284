// The crash loop of crash_test.cpp, shared with the PostgreSQL tests: a child process
// (crash_writer, DORM_CRASH_WRITER) commits 1,000-key batches in a loop and reports each
// `begin N` / `ack N`; it is SIGKILLed at random moments (seeded), the store is reopened
// and checked, and the next child continues on the same store. Only kills that land
// between a `begin` and its `ack` test atomicity, so the loop insists on enough of them.
#pragma once

#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "dorm/storage/open.hpp"

extern char** environ;

namespace dorm::testing::crash {


// At least kKills kills, and more (up to kMaxKills) until kMinKillsInsideCommit of them
// landed inside a commit: where a kill lands depends on timing, which a loaded machine
// shifts, so the loop keeps going rather than hoping.
constexpr int kKills = 30;
constexpr int kMinKillsInsideCommit = 10;
constexpr int kMaxKills = 300;
constexpr auto kChildSilenceLimit = std::chrono::seconds(60);

struct ChildRun {
  std::set<long> begun;
  std::set<long> acked;
  bool last_line_was_begin = false;
};

// Starts crash_writer, waits for `acks_before_kill` acks, sleeps `delay`, SIGKILLs it and
// returns everything it printed. Every wait is bounded.
inline ChildRun run_and_kill(const std::string& uri, long first_batch, int acks_before_kill,
                      std::chrono::microseconds delay) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string first = std::to_string(first_batch);
  const char* argv[] = {DORM_CRASH_WRITER, uri.c_str(), first.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, DORM_CRASH_WRITER, &actions, nullptr, const_cast<char**>(argv),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  REQUIRE(rc == 0);

  ChildRun run;
  std::string pending;
  auto consume = [&](bool block) {
    pollfd p{out[0], POLLIN, 0};
    int timeout = block ? static_cast<int>(std::chrono::milliseconds(kChildSilenceLimit).count()) : 0;
    if (poll(&p, 1, timeout) <= 0) return false;
    char buf[4096];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) return false;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.starts_with("begin ")) {
        run.begun.insert(std::stol(line.substr(6)));
        run.last_line_was_begin = true;
      } else if (line.starts_with("ack ")) {
        run.acked.insert(std::stol(line.substr(4)));
        run.last_line_was_begin = false;
      }
    }
    return true;
  };
  bool alive = true;
  while (alive && static_cast<int>(run.acked.size()) < acks_before_kill) alive = consume(true);
  if (alive) std::this_thread::sleep_for(delay);  // a random kill moment, not a sync point
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (consume(false)) {
  }
  close(out[0]);
  REQUIRE_MESSAGE(alive, "crash_writer stopped printing before it was killed");
  CHECK(WIFSIGNALED(status));
  return run;
}

// Kills crash_writer on the store `uri` again and again, checking the store after each.
inline void crash_loop(const std::string& uri, const std::string& label) {
  std::mt19937 rng(20261129);
  std::set<long> all_acked;
  std::set<long> all_begun;
  int inside_commit = 0;
  int k = 0;
  for (; k < kMaxKills && (k < kKills || inside_commit < kMinKillsInsideCommit); ++k) {
    long first = (k + 1) * 1'000'000L;
    auto acks = std::uniform_int_distribution<int>(1, 4)(rng);
    auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 4000)(rng));
    ChildRun run = run_and_kill(uri, first, acks, delay);
    if (run.last_line_was_begin) ++inside_commit;
    all_acked.insert(run.acked.begin(), run.acked.end());
    all_begun.insert(run.begun.begin(), run.begun.end());

    auto store = dorm::storage::open_backend(uri);
    if (!store) FAIL("reopen failed: " << store.error().describe());
    auto rows = (*store)->scan(dorm::storage::ScanOptions::with_prefix("batch/"));
    REQUIRE(rows.ok());
    std::map<long, int> keys_per_batch;
    for (const auto& kv : *rows) keys_per_batch[std::stol(kv.key.substr(6, 10))]++;
    for (const auto& entry : keys_per_batch) {
      long batch = entry.first;  // a named copy: clang cannot capture a structured binding
      int count = entry.second;
      CAPTURE(batch);
      CHECK(count == 1000);                   // all or nothing
      CHECK(all_begun.count(batch) == 1);     // nothing appears that was never written
    }
    for (long batch : all_acked) {
      CAPTURE(batch);
      CHECK(keys_per_batch.count(batch) == 1);  // acknowledged means durable
    }
  }
  MESSAGE(label << ": " << inside_commit << " of " << k << " kills landed inside a commit");
  CHECK(inside_commit >= kMinKillsInsideCommit);
}

}  // namespace dorm::testing::crash
