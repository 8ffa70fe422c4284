#include "lane.hpp"

#include <rapidjson/document.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "workload.hpp"

namespace dorm::torture {

namespace asio = boost::asio;
using deploy_sim::McpClient;
using deploy_sim::SeededRng;
using std::chrono::milliseconds;

namespace {

constexpr auto kForever = std::chrono::hours(24 * 365);
constexpr std::int64_t kThinkMaxMs = 20;
constexpr std::int64_t kSleepMinMs = 100;
constexpr std::int64_t kResumeMinMs = 300;
constexpr std::int64_t kResumeMaxMs = 1500;
// The drop comes at least this long after the POST's response header and, unless the
// server is slow, before the sleep ends: it hits the call's stream while nothing is on it.
constexpr std::int64_t kDropMarginMs = 50;

// Whether a CallToolResult's JSON text says isError: true.
bool is_error_result(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return true;
  auto it = doc.FindMember("isError");
  return it != doc.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

AppendOutcome append_outcome(const CallRecord& c) {
  if (c.outcome.kind == testing::OutcomeKind::answered)
    return c.error_result ? AppendOutcome::refused : AppendOutcome::acknowledged;
  if (c.outcome.kind == testing::OutcomeKind::failed && c.outcome.code != 0)
    return AppendOutcome::refused;
  return AppendOutcome::unanswered;
}

// One call of the workload on `session`, recorded in run.calls; returns when the client
// is done with it (its outcome is recorded by then).
// Where a call of a resume step is, for the coroutine that drops its connections.
struct CallStage {
  bool accepted = false;  // the POST got its response header (or failed)
  bool ended = false;     // the client is done with the call
};

asio::awaitable<void> workload_call(std::shared_ptr<Run> run, CallKind kind, std::size_t session,
                                    std::string token, std::string tool, std::string arguments,
                                    std::shared_ptr<CallStage> stage = nullptr) {
  std::size_t index = run->calls.size();
  CallRecord record;
  record.kind = kind;
  record.session = session;
  record.token = std::move(token);
  record.start = Clock::now();
  run->calls.push_back(std::move(record));
  deploy_sim::CallHooks hooks;
  hooks.accepted = [run, stage] {
    if (!stage) return;
    stage->accepted = true;
    run->changed.notify();
  };
  hooks.result = [run, index](const std::string& json) {
    run->calls[index].error_result = is_error_result(json);
  };
  hooks.settled = [run, index](const testing::Outcome& outcome) {
    auto& c = run->calls[index];
    c.outcome = outcome;
    c.end = Clock::now();
    if (c.kind == CallKind::append)
      run->sessions[c.session]->ledger.record(c.token, append_outcome(c));
    run->changed.notify();
  };
  Session& s = *run->sessions[session];
  std::int64_t id = s.next_request_id++;
  auto deadline = Clock::now() + kCallTimeout;
  co_await s.client->call(id, std::move(tool), std::move(arguments), deadline, std::move(hooks));
}

std::string sleep_arguments(std::int64_t ms) {
  return R"({"ms":)" + std::to_string(ms) + "}";
}

// Drops every connection of `session`'s client `after` its call's POST got its response
// header, unless the call ended before: the drop hits the call's stream, which the client
// resumes, rather than its POST, which the client could only fail.
asio::awaitable<void> drop_after_accepted(std::shared_ptr<Run> run, std::size_t session,
                                          milliseconds after, std::shared_ptr<CallStage> stage) {
  RunTask task(*run);
  const CallStage* st = stage.get();
  const Run* r = run.get();
  // Once a kill is coming the drop is off: it would only push the call's reconnect
  // back by R, measuring the client rather than the restart.
  auto gone = [st, r] { return st->ended || r->phase != Phase::load; };
  co_await run->changed.until([st, gone] { return st->accepted || gone(); },
                              Clock::now() + kCallTimeout);
  if (!stage->accepted || gone()) co_return;
  co_await run->changed.until(gone, Clock::now() + after);
  if (!gone()) run->client(session).drop_connections();
}

std::uint64_t lane_seed(std::uint64_t seed, int lane) {
  return seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(lane + 1));
}

// One step of lane `lane`, drawn from its generator; `session` is the lane's session (a
// session step moves it), `appends` its count of appends so far.
asio::awaitable<void> step(std::shared_ptr<Run> run, SeededRng& rng, int lane, std::size_t& session,
                           std::int64_t& appends) {
  BusyLane busy(*run);
  auto roll = rng.uniform(0, 99);
  bool at_cap = run->sessions.size() + static_cast<std::size_t>(run->opening) >=
                static_cast<std::size_t>(run->max_sessions);
  // Named arguments only: g++ 12 destroys some temporaries of a co_await expression twice.
  std::string token;
  std::string tool = "sleep";
  // Every other lane is a writer: its slow steps are appends too, so that a kill always
  // finds appends in flight (a lane in a sleep of the mix spends ~100x longer there than
  // in an append, and the mix alone left few writes for the kill to cut).
  bool writer = lane % 2 == 1;
  if (roll < 65 || (writer && roll < 95) || (roll >= 95 && at_cap)) {
    token = ledger_token(run->cycle, lane, ++appends);
    std::string arguments = R"({"token":")" + token + "\"}";
    tool = "ledger_append";
    co_await workload_call(run, CallKind::append, session, std::move(token), std::move(tool),
                           std::move(arguments));
  } else if (roll < 80) {
    std::string arguments = sleep_arguments(rng.uniform(kSleepMinMs, kSleepMaxMs));
    co_await workload_call(run, CallKind::sleep, session, std::move(token), std::move(tool),
                           std::move(arguments));
  } else if (roll < 95) {
    auto ms = rng.uniform(kResumeMinMs, kResumeMaxMs);
    auto drop_after = rng.uniform(kDropMarginMs, ms - kDropMarginMs);
    auto stage = std::make_shared<CallStage>();
    asio::co_spawn(run->executor,
                   drop_after_accepted(run, session, milliseconds(drop_after), stage),
                   asio::detached);
    std::string arguments = sleep_arguments(ms);
    co_await workload_call(run, CallKind::resume, session, std::move(token), std::move(tool),
                           std::move(arguments), stage);
    stage->ended = true;
    run->changed.notify();
  } else {
    std::size_t opened = 0;
    ++run->opening;
    std::string failed = co_await open_session(run, &opened);
    --run->opening;
    if (failed.empty()) {
      session = opened;
    } else {
      ++run->opens_failed;
    }
  }
}

}  // namespace

testing::ReconnectOptions Run::reconnect() const {
  // The SDK's rules, except that the client keeps trying for as long as a restart may
  // take: the SDK's two attempts would give up on a successor slower than 2R to start,
  // and the check is of the server's side (a call must end once a successor is ready).
  testing::ReconnectOptions options;
  options.initial_delay_ms = retry_ms;
  options.max_retries =
      static_cast<int>(std::chrono::duration_cast<milliseconds>(kStartWait).count() / retry_ms) + 2;
  return options;
}

std::string ledger_token(int cycle, int lane, std::int64_t n) {
  return "c" + std::to_string(cycle) + ".l" + std::to_string(lane) + "." + std::to_string(n);
}

asio::awaitable<std::string> open_session(std::shared_ptr<Run> run, std::size_t* index) {
  auto session = std::make_unique<Session>();
  session->client = std::make_unique<McpClient>(run->executor, kHost, run->port, run->reconnect());
  auto deadline = Clock::now() + kStartWait;
  std::string failed = co_await session->client->open(deadline);
  if (!failed.empty()) co_return failed;
  session->id = session->client->session_id();
  *index = run->sessions.size();
  run->sessions.push_back(std::move(session));
  run->changed.notify();
  co_return std::string();
}

asio::awaitable<void> run_lane(std::shared_ptr<Run> run, int lane, std::size_t session) {
  RunTask task(*run);
  SeededRng rng(lane_seed(run->seed, lane));
  std::int64_t appends = 0;
  const Run* r = run.get();
  for (;;) {
    co_await run->changed.until([r] { return r->phase != Phase::paused; }, Clock::now() + kForever);
    if (run->phase == Phase::done) co_return;
    co_await step(run, rng, lane, session, appends);
    auto think = milliseconds(rng.uniform(0, kThinkMaxMs));
    co_await deploy_sim::sleep_until(Clock::now() + think);
  }
}

}  // namespace dorm::torture
