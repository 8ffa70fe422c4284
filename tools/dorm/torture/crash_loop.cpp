#include "crash_loop.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <csignal>
#include <cstdarg>
#include <memory>
#include <vector>

#include "lane.hpp"
#include "server_process.hpp"
#include "workload.hpp"

namespace dorm::torture {

namespace asio = boost::asio;
using deploy_sim::ServerProcess;
using deploy_sim::sleep_until;
using std::chrono::milliseconds;

namespace {

// A kill comes this long after the lanes were let go: late enough that every lane is in
// the middle of something, early enough that a cycle stays short.
constexpr std::int64_t kKillMinMs = 100;
constexpr std::int64_t kKillMaxMs = 1500;
// How long a check's ledger_read may take (a session with thousands of tokens, under ASan).
constexpr auto kReadWait = std::chrono::seconds(30);
constexpr auto kCloseWait = std::chrono::seconds(10);
constexpr auto kStopWait = std::chrono::seconds(15);  // SIGTERM to exit, no call running

std::int64_t ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<milliseconds>(to - from).count();
}

// The run's one server at a time, always on the same port and store.
class Server {
 public:
  Server(const LoopPlan& plan, asio::any_io_executor executor) : plan_(plan), executor_(executor) {}

  // Starts a server (on `port`, 0 for any) and waits for its ready line. Returns its port.
  asio::awaitable<Result<std::uint16_t>> start(std::uint16_t port) {
    std::vector<std::string> args{"serve",
                                  "--listen",
                                  std::string(kHost) + ":" + std::to_string(port),
                                  "--storage",
                                  plan_.storage_uri,
                                  "--fixtures",
                                  "testing",
                                  "--retry-ms",
                                  std::to_string(plan_.options.retry_ms),
                                  "--lock-wait",
                                  "30",
                                  "--log-format",
                                  "json"};
    auto started = ServerProcess::start(executor_, plan_.dorm, args);
    if (!started) co_return std::move(started).error();
    current_ = std::move(started).value();
    auto ready = co_await current_->ready(Clock::now() + kStartWait);
    if (!ready) {
      auto exited = co_await current_->exited(Clock::now() + milliseconds(500));
      (void)exited;
      co_return Error{ErrorCode::io_error,
                      "dorm serve did not turn ready: " + current_->describe()};
    }
    co_return *ready;
  }

  asio::awaitable<Result<void>> kill() {
    current_->signal(SIGKILL);
    auto status = co_await current_->exited(Clock::now() + kExitWait);
    if (!status)
      co_return Error{ErrorCode::io_error,
                      "dorm serve was not reaped after SIGKILL: " + current_->describe()};
    co_return Result<void>{};
  }

  int pid() const { return current_ ? static_cast<int>(current_->pid()) : 0; }

  // SIGTERM, and SIGKILL if it has not exited in time.
  asio::awaitable<void> stop() {
    if (!current_) co_return;
    current_->signal(SIGTERM);
    auto status = co_await current_->exited(Clock::now() + kStopWait);
    if (!status) {
      current_->signal(SIGKILL);
      co_await current_->exited(Clock::now() + kExitWait);
    }
  }

 private:
  const LoopPlan& plan_;
  asio::any_io_executor executor_;
  std::unique_ptr<ServerProcess> current_;
};

// What ledger_read gave one session at a check.
struct LedgerRead {
  bool done = false;
  std::vector<std::string> tokens;
  std::string failure;  // empty when the tokens were read
};

std::string read_failure(const testing::Outcome& o) {
  switch (o.kind) {
    case testing::OutcomeKind::answered:
      return {};
    case testing::OutcomeKind::failed:
      return o.code != 0 ? "error " + std::to_string(o.code) + " (" + o.reason + ")" : o.reason;
    case testing::OutcomeKind::hung:
      return "no answer within " + std::to_string(kReadWait.count()) + " s";
    case testing::OutcomeKind::pending:
      break;
  }
  return "no outcome";
}

// The tokens of a ledger_read result, or why there are none.
void parse_tokens(const std::string& json, LedgerRead& out) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    out.failure = "ledger_read: a result that is not a JSON object";
    return;
  }
  if (doc.HasMember("isError") && doc["isError"].IsBool() && doc["isError"].GetBool()) {
    const auto& content = doc["content"];
    out.failure = "ledger_read: error result";
    if (content.IsArray() && !content.Empty() && content[0].HasMember("text") &&
        content[0]["text"].IsString())
      out.failure += std::string(": ") + content[0]["text"].GetString();
    return;
  }
  if (!doc.HasMember("structuredContent") || !doc["structuredContent"].IsObject() ||
      !doc["structuredContent"].HasMember("tokens") ||
      !doc["structuredContent"]["tokens"].IsArray()) {
    out.failure = "ledger_read: no structuredContent.tokens in its result";
    return;
  }
  for (const auto& t : doc["structuredContent"]["tokens"].GetArray()) {
    if (t.IsString()) out.tokens.emplace_back(t.GetString(), t.GetStringLength());
  }
}

asio::awaitable<void> read_ledger(std::shared_ptr<Run> run, std::size_t session,
                                  std::shared_ptr<std::vector<LedgerRead>> reads) {
  RunTask task(*run);
  Session& s = *run->sessions[session];
  deploy_sim::CallHooks hooks;
  hooks.accepted = [] {};
  hooks.result = [reads, session](const std::string& json) {
    parse_tokens(json, (*reads)[session]);
  };
  hooks.settled = [reads, session](const testing::Outcome& o) {
    auto& r = (*reads)[session];
    if (r.failure.empty()) r.failure = read_failure(o);
  };
  std::int64_t id = s.next_request_id++;
  std::string tool = "ledger_read";
  std::string arguments = "{}";
  co_await s.client->call(id, std::move(tool), std::move(arguments), Clock::now() + kReadWait,
                          std::move(hooks));
  (*reads)[session].done = true;
  run->changed.notify();
}

class CrashLoop {
 public:
  CrashLoop(const LoopPlan& plan, std::shared_ptr<Run> run, std::FILE* progress)
      : plan_(plan),
        run_(std::move(run)),
        progress_(progress),
        server_(plan, run_->executor),
        kill_rng_(plan.options.seed) {
    totals_.seed = plan.options.seed;
    totals_.storage = plan.options.storage;
    totals_.lanes = plan.options.sessions;
    totals_.cycles_planned = plan.options.cycles;
    totals_.retry_ms = plan.options.retry_ms;
  }

  asio::awaitable<TortureTotals> run() {
    auto t0 = Clock::now();
    auto done = co_await start_and_open();
    for (int cycle = 1; done && cycle <= plan_.options.cycles; ++cycle) {
      done = co_await one_cycle(cycle);
      if (done) totals_.cycles = cycle;
      double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      if (done && cycle < plan_.options.cycles && elapsed > plan_.options.time_limit_s) {
        done = Error{ErrorCode::unavailable, "the time limit (" +
                                                 std::to_string(plan_.options.time_limit_s) +
                                                 " s) passed after cycle " + std::to_string(cycle)};
      }
    }
    if (!done) totals_.stopped = done.error().message;
    co_await finish();
    totals_.sessions = run_->sessions.size();
    totals_.sessions_not_opened = run_->opens_failed;
    totals_.error_ms_p50 = testing::percentile(error_ms_, 0.5);
    totals_.error_ms_p99 = testing::percentile(error_ms_, 0.99);
    totals_.error_ms_max = testing::percentile(error_ms_, 1.0);
    totals_.restart_ms_p50 = testing::percentile(restart_ms_, 0.5);
    totals_.restart_ms_max = testing::percentile(restart_ms_, 1.0);
    totals_.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    co_return totals_;
  }

 private:
  void say(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, format);
    std::fputs("torture: ", progress_);
    std::vfprintf(progress_, format, args);
    std::fputc('\n', progress_);
    std::fflush(progress_);
    va_end(args);
  }

  void finding(const std::string& text) {
    say("FINDING %s", text.c_str());
    if (totals_.findings.size() < kMaxFindings) totals_.findings.push_back(text);
    ++cycle_violations_;
  }

  asio::awaitable<Result<void>> start_and_open() {
    auto port = co_await server_.start(0);
    if (!port) co_return Error{port.error().code, "the first " + port.error().message};
    run_->port = *port;
    int lanes = plan_.options.sessions;
    auto opened = std::make_shared<int>(0);
    auto failures = std::make_shared<std::vector<std::string>>();
    auto indexes = std::make_shared<std::vector<std::size_t>>(static_cast<std::size_t>(lanes));
    for (int lane = 0; lane < lanes; ++lane) {
      asio::co_spawn(
          run_->executor,
          open_first(run_, opened, failures, &(*indexes)[static_cast<std::size_t>(lane)]),
          asio::detached);
    }
    const int* n = opened.get();
    co_await run_->changed.until([n, lanes] { return *n == lanes; },
                                 Clock::now() + kStartWait + kCloseWait);
    if (*opened < lanes)
      co_return Error{ErrorCode::unavailable, "the first sessions did not open in time"};
    if (!failures->empty())
      co_return Error{ErrorCode::io_error, "a session did not open: " + failures->front()};
    for (int lane = 0; lane < lanes; ++lane) {
      asio::co_spawn(run_->executor,
                     run_lane(run_, lane, (*indexes)[static_cast<std::size_t>(lane)]),
                     asio::detached);
    }
    say("dorm serve (pid %d) ready on port %u, %d sessions open, store %s", server_.pid(),
        static_cast<unsigned>(run_->port), lanes, plan_.storage_uri.c_str());
    co_return Result<void>{};
  }

  static asio::awaitable<void> open_first(std::shared_ptr<Run> run, std::shared_ptr<int> opened,
                                          std::shared_ptr<std::vector<std::string>> failures,
                                          std::size_t* index) {
    RunTask task(*run);
    std::string failed = co_await open_session(run, index);
    if (!failed.empty()) failures->push_back(failed);
    ++*opened;
    run->changed.notify();
  }

  asio::awaitable<Result<void>> one_cycle(int cycle) {
    cycle_violations_ = 0;
    run_->cycle = cycle;
    run_->phase = Phase::load;
    run_->changed.notify();
    auto kill_after = kill_rng_.uniform(kKillMinMs, kKillMaxMs);
    co_await sleep_until(Clock::now() + milliseconds(kill_after));

    run_->phase = Phase::paused;
    auto kill_at = Clock::now();
    for (auto& c : run_->calls) {
      if (c.outcome.kind == testing::OutcomeKind::pending) c.hit_by_kill = true;
    }
    auto killed = co_await server_.kill();
    if (!killed) co_return prefixed(cycle, killed.error());
    auto ready = co_await server_.start(run_->port);
    if (!ready) co_return prefixed(cycle, ready.error());
    auto ready_at = Clock::now();
    restart_ms_.push_back(ms_between(kill_at, ready_at));

    const Run* r = run_.get();
    co_await run_->changed.until([r] { return r->busy_lanes == 0; },
                                 ready_at + kCallTimeout + kCloseWait);
    if (run_->busy_lanes > 0)
      co_return Error{ErrorCode::unavailable,
                      "cycle " + std::to_string(cycle) + ": lanes still busy past every deadline"};
    auto calls = summarize_calls(cycle, kill_at, ready_at);
    auto checked = co_await check_sessions(cycle);
    say("cycle %d/%d: killed after %lld ms, successor (pid %d) ready %.2f s later; %zu calls (%zu "
        "acked, %zu "
        "reaped), %zu sessions checked, %d violations",
        cycle, plan_.options.cycles, static_cast<long long>(kill_after), server_.pid(),
        static_cast<double>(ms_between(kill_at, ready_at)) / 1000.0, calls.calls, calls.acked,
        calls.reaped, checked, cycle_violations_);
    co_return Result<void>{};
  }

  static Error prefixed(int cycle, const Error& e) {
    return Error{e.code, "cycle " + std::to_string(cycle) + ": " + e.message};
  }

  struct CycleCalls {
    std::size_t calls = 0;
    std::size_t acked = 0;
    std::size_t reaped = 0;
  };

  static const char* tool_of(CallKind kind) {
    return kind == CallKind::append  ? "ledger_append"
           : kind == CallKind::sleep ? "sleep"
                                     : "sleep (resumed)";
  }

  // Adds the cycle's calls to the totals and reports those that hung; clears them.
  CycleCalls summarize_calls(int cycle, Clock::time_point kill_at, Clock::time_point ready_at) {
    CycleCalls out;
    auto allowed = ready_at + milliseconds(plan_.options.retry_ms) + kHangSlack;
    for (const auto& c : run_->calls) {
      ++out.calls;
      bool failed = c.outcome.kind == testing::OutcomeKind::failed;
      if (c.kind == CallKind::append) {
        ++totals_.appends;
        bool acked = c.outcome.kind == testing::OutcomeKind::answered && !c.error_result;
        if (acked) ++out.acked;
        if (c.hit_by_kill) {
          ++totals_.appends_hit;
          if (acked) ++totals_.appends_hit_acked;
        }
      }
      if (failed) {
        ++totals_.errors;
        if (c.outcome.code == -32001 &&
            (c.outcome.reason == "server_restart" || c.outcome.reason == "session_reset"))
          ++out.reaped;
        if (c.hit_by_kill) {
          error_ms_.push_back(ms_between(kill_at, c.end));
        } else {
          ++totals_.errors_without_kill;
          ++totals_.errors_without_kill_reasons[c.outcome.reason.empty() ? "unknown"
                                                                         : c.outcome.reason];
        }
      }
      bool hung =
          c.outcome.kind == testing::OutcomeKind::hung || (c.hit_by_kill && c.end > allowed);
      if (hung) {
        ++totals_.hung;
        std::string token = c.token.empty() ? "" : " " + c.token;
        finding("cycle " + std::to_string(cycle) + ", session " + run_->sessions[c.session]->id +
                ": " + tool_of(c.kind) + token + " ended " +
                std::to_string(ms_between(ready_at, c.end)) + " ms after the restart (" +
                std::string(testing::to_string(c.outcome.kind)) + ")");
      }
    }
    totals_.calls += out.calls;
    totals_.acked += out.acked;
    totals_.reaped += out.reaped;
    run_->calls.clear();
    return out;
  }

  // ledger_read on every session not lost yet, each checked against its ledger. Returns how
  // many were read.
  asio::awaitable<std::size_t> check_sessions(int cycle) {
    std::size_t n = run_->sessions.size();
    auto reads = std::make_shared<std::vector<LedgerRead>>(n);
    std::vector<std::size_t> asked;
    for (std::size_t i = 0; i < n; ++i) {
      if (run_->sessions[i]->lost) continue;
      asked.push_back(i);
      asio::co_spawn(run_->executor, read_ledger(run_, i, reads), asio::detached);
    }
    const auto* all = reads.get();
    const auto* which = &asked;
    co_await run_->changed.until(
        [all, which] {
          return std::all_of(which->begin(), which->end(),
                             [all](std::size_t i) { return (*all)[i].done; });
        },
        Clock::now() + kReadWait + kCloseWait);
    std::size_t read = 0;
    for (std::size_t i : asked) {
      auto& s = *run_->sessions[i];
      const auto& r = (*reads)[i];
      std::string where = "cycle " + std::to_string(cycle) + ", session " + s.id + ": ";
      if (!r.done || !r.failure.empty()) {
        s.lost = true;
        ++totals_.sessions_lost;
        finding(where + "ledger_read failed: " + (r.done ? r.failure : "no outcome"));
        continue;
      }
      ++read;
      auto check = s.ledger.check(r.tokens);
      totals_.lost += check.lost;
      totals_.duplicated += check.duplicated;
      totals_.reappeared += check.reappeared;
      totals_.foreign += check.foreign;
      totals_.unacked_stored += check.settled_stored;
      totals_.unacked_absent += check.settled_absent;
      totals_.unacked_stored_after_error += check.settled_stored_refused;
      for (const auto& f : check.findings) {
        finding(where + "token " + f.token + " " + std::string(to_string(f.kind)) + " (read back " +
                std::to_string(f.count) + " times)");
      }
    }
    co_return read;
  }

  // Lanes return, every client closes, the server stops.
  asio::awaitable<void> finish() {
    run_->phase = Phase::done;
    run_->changed.notify();
    for (auto& s : run_->sessions) s->client->close();
    auto deadline = Clock::now() + kCallTimeout;
    while (
        Clock::now() < deadline &&
        (run_->tasks > 0 || std::any_of(run_->sessions.begin(), run_->sessions.end(),
                                        [](const auto& s) { return s->client->running() > 0; }))) {
      co_await sleep_until(Clock::now() + milliseconds(5));
    }
    co_await server_.stop();
  }

  const LoopPlan& plan_;
  std::shared_ptr<Run> run_;
  std::FILE* progress_;
  Server server_;
  deploy_sim::SeededRng kill_rng_;
  TortureTotals totals_;
  std::vector<std::int64_t> error_ms_;
  std::vector<std::int64_t> restart_ms_;
  int cycle_violations_ = 0;
};

}  // namespace

asio::awaitable<TortureTotals> run_crash_loop(const LoopPlan& plan, std::FILE* progress) {
  auto executor = co_await asio::this_coro::executor;
  auto run = std::make_shared<Run>(executor, plan.options.seed, plan.options.retry_ms);
  // A lane opens new sessions up to twice the concurrent ones: enough that sessions come
  // and go under load, few enough that every check reads them all.
  run->max_sessions = 2 * plan.options.sessions;
  CrashLoop loop(plan, run, progress);
  auto totals = co_await loop.run();
  co_return totals;
}

}  // namespace dorm::torture
