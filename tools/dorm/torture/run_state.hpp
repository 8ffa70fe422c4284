// What the coroutines of one `dorm torture` run share on its I/O thread: the sessions with
// their clients and ledgers, the calls of the current cycle, and the phase that tells the
// lanes whether they may start work.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dorm/testing/call_outcome.hpp"
#include "ledger_check.hpp"
#include "mcp_client.hpp"
#include "notifier.hpp"

namespace dorm::torture {

using deploy_sim::Clock;

// The run's constants that are not options.
inline constexpr const char* kHost = "127.0.0.1";
// Bounds on waits for a process, generous enough for sanitizer builds on a busy machine.
inline constexpr auto kStartWait = std::chrono::seconds(60);  // start to ready
inline constexpr auto kExitWait = std::chrono::seconds(10);   // a SIGKILLed process reaped
// The slack the hung check gives a call past the restart and its client's reconnect delay.
inline constexpr auto kHangSlack = std::chrono::seconds(2);
// A call's client timeout: longer than any sleep the workload asks for plus a restart at
// its slowest, so that only a call nothing answers reaches it.
inline constexpr std::int64_t kSleepMaxMs = 2000;
inline constexpr auto kCallTimeout =
    std::chrono::milliseconds(kSleepMaxMs) + kStartWait + std::chrono::seconds(15);

enum class Phase {
  load,    // lanes start calls
  paused,  // a kill is coming or happened: lanes finish what they run and start nothing
  done,    // lanes return
};

struct Session {
  std::unique_ptr<deploy_sim::McpClient> client;
  std::string id;  // the MCP session id, as the client holds it
  SessionLedger ledger;
  std::int64_t next_request_id = 1;
  bool lost = false;  // reported lost once; not checked again
};

enum class CallKind { append, sleep, resume };

// One call of the workload, in the cycle it started in.
struct CallRecord {
  CallKind kind = CallKind::append;
  std::size_t session = 0;
  std::string token;  // append only
  Clock::time_point start;
  Clock::time_point end;      // its outcome arrived
  testing::Outcome outcome;   // pending until then
  bool error_result = false;  // answered with a result whose isError is true
  bool hit_by_kill = false;   // it had no outcome when the cycle's kill came
};

struct Run {
  Run(boost::asio::any_io_executor executor, std::uint64_t seed, std::int64_t retry_ms)
      : executor(executor), changed(executor), seed(seed), retry_ms(retry_ms) {}

  boost::asio::any_io_executor executor;
  deploy_sim::Notifier changed;  // notified whenever anything below changes
  std::uint64_t seed;
  std::int64_t retry_ms;
  std::uint16_t port = 0;
  int max_sessions = 0;  // new sessions are opened while there are fewer

  Phase phase = Phase::paused;
  int cycle = 0;       // the current cycle, from 1 (0 before the first)
  int busy_lanes = 0;  // lanes inside a step
  int tasks = 0;       // lanes and other coroutines of the run that have not returned

  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<CallRecord> calls;  // this cycle's; cleared by its check
  int opening = 0;                // new sessions whose initialize is under way
  std::size_t opens_failed = 0;   // new sessions whose initialize did not succeed (a kill)

  deploy_sim::McpClient& client(std::size_t session) { return *sessions[session]->client; }
  testing::ReconnectOptions reconnect() const;
};

// Keeps a coroutine counted in Run::tasks while it lives.
class RunTask {
 public:
  explicit RunTask(Run& run) : run_(run) { ++run_.tasks; }
  ~RunTask() {
    --run_.tasks;
    run_.changed.notify();
  }
  RunTask(const RunTask&) = delete;
  RunTask& operator=(const RunTask&) = delete;

 private:
  Run& run_;
};

// Keeps the lane counted in Run::busy_lanes while it lives.
class BusyLane {
 public:
  explicit BusyLane(Run& run) : run_(run) { ++run_.busy_lanes; }
  ~BusyLane() {
    --run_.busy_lanes;
    run_.changed.notify();
  }
  BusyLane(const BusyLane&) = delete;
  BusyLane& operator=(const BusyLane&) = delete;

 private:
  Run& run_;
};

}  // namespace dorm::torture
