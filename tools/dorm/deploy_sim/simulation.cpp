#include "simulation.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>

#include "mcp_client.hpp"
#include "notifier.hpp"
#include "server_process.hpp"

namespace dorm::deploy_sim {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// Bounds on waits for a process, generous enough for sanitizer builds on a busy machine.
constexpr auto kStartWait = seconds(60);   // start to bound or ready
constexpr auto kExitWait = seconds(10);    // a SIGKILLed process to be reaped
constexpr auto kSettleSlack = seconds(5);  // past the last client timeout
constexpr auto kShutdownSlack = seconds(10);
// A /readyz probe without an answer by then counts as unanswered: any server, however
// busy, answers it from its HTTP layer well within that.
constexpr auto kProbeWait = seconds(5);
constexpr const char* kHost = "127.0.0.1";

// What the row's coroutines share; calls and the prober hold it, so it lives as long as
// the last of them.
struct RowState {
  explicit RowState(asio::any_io_executor executor) : executor(executor), changed(executor) {}
  asio::any_io_executor executor;
  Notifier changed;
  std::vector<std::unique_ptr<McpClient>> clients;
  RowRun run;
  Clock::time_point t0 = Clock::now();
  int opened = 0;
  std::string open_error;
  int accepted = 0;  // calls of the current round whose POST got a header or failed
  int settled = 0;   // calls of the row with their outcome
  // Milliseconds since the row started, the unit of the row's records.
  std::int64_t ms(Clock::time_point t) const {
    return std::chrono::duration_cast<milliseconds>(t - t0).count();
  }
};

// Probes /readyz every kReadyzProbeMs from a deploy until stop is set and a server answered.
struct Prober {
  bool stop = false;
  bool done = false;
  double unanswered_ms_max = 0;
  int unanswered_probes = 0;
};

asio::awaitable<void> probe_readyz(std::shared_ptr<Prober> p, std::shared_ptr<RowState> st,
                                   std::uint16_t port, Clock::time_point from,
                                   Clock::time_point until) {
  auto executor = co_await asio::this_coro::executor;
  auto last_answer = from;
  // A named request: g++ 12 destroys a braced temporary inside a co_await expression twice.
  const HttpRequest readyz{"GET", "/readyz", {}, {}};
  while (Clock::now() < until) {
    HttpClient client(executor, kHost, port);
    HttpAnswer answer = co_await client.send(readyz, Clock::now() + kProbeWait, false);
    auto now = Clock::now();
    if (!answer.response) {
      ++p->unanswered_probes;
    } else {
      p->unanswered_ms_max =
          std::max(p->unanswered_ms_max,
                   std::chrono::duration<double, std::milli>(now - last_answer).count());
      last_answer = now;
      if (p->stop) break;
    }
    co_await sleep_until(now + milliseconds(kReadyzProbeMs));
  }
  p->done = true;
  st->changed.notify();
}

asio::awaitable<void> open_client(std::shared_ptr<RowState> st, std::size_t i,
                                  Clock::time_point deadline) {
  std::string failed = co_await st->clients[i]->open(deadline);
  if (!failed.empty() && st->open_error.empty()) st->open_error = failed;
  ++st->opened;
  st->changed.notify();
}

asio::awaitable<void> run_call(std::shared_ptr<RowState> st, std::size_t index, std::int64_t id,
                               Clock::time_point deadline, Progress* progress) {
  const SimCall& call = st->run.calls[index];
  McpClient& client = *st->clients[static_cast<std::size_t>(call.session)];
  CallHooks hooks;
  hooks.accepted = [st] {
    ++st->accepted;
    st->changed.notify();
  };
  hooks.settled = [st, index, progress](const testing::Outcome& outcome) {
    auto& c = st->run.calls[index].record;
    c.outcome = outcome;
    c.end_ms = st->ms(Clock::now());
    progress->settled(++st->settled);
    st->changed.notify();
  };
  co_await client.call(id, kCallTool, call_arguments(call.duration_ms), deadline, std::move(hooks));
}

// Waits until nothing accepts connections on `port` any more (the old server closed its
// listener), so a successor can bind it.
asio::awaitable<bool> listener_closed(std::uint16_t port, Clock::time_point deadline) {
  auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::endpoint to(asio::ip::make_address(kHost), port);
  for (;;) {
    asio::ip::tcp::socket probe(executor);
    auto [ec] = co_await probe.async_connect(to, kTuple);
    if (ec == asio::error::connection_refused) co_return true;
    if (Clock::now() >= deadline) co_return false;
    co_await sleep_until(Clock::now() + milliseconds(5));
  }
}

}  // namespace

std::vector<std::string> serve_args(const RowPlan& plan, std::uint16_t port,
                                    const std::string& node_id) {
  const auto& key = plan.key;
  std::string storage =
      plan.storage.empty() ? "rocksdb:" + (plan.dir / "data").string() : plan.storage;
  std::vector<std::string> a{"serve",
                             "--listen",
                             std::string(kHost) + ":" + std::to_string(port),
                             "--storage",
                             storage,
                             "--fixtures",
                             "testing",
                             "--retry-ms",
                             std::to_string(key.retry_ms),
                             "--log-format",
                             "json"};
  if (!node_id.empty()) {
    a.insert(a.end(), {"--node-id", node_id});
    if (plan.lease_ms > 0) {
      a.insert(a.end(), {"--lease-ms", std::to_string(plan.lease_ms), "--lease-renew-ms",
                         std::to_string(std::max<std::int64_t>(plan.lease_ms / 4, 1))});
    }
  }
  if (key.variant == "no-fix") a.insert(a.end(), {"--no-priming", "--no-reaper"});
  if (key.variant == "priming-only") a.push_back("--no-reaper");
  double lock_wait_s = 10;
  if (key.mode != "kill") {
    char drain[32];
    std::snprintf(drain, sizeof drain, "%g", plan.drain_timeout_s);
    a.insert(a.end(), {"--drain-timeout", drain});
    // The successor waits for the store lock while its predecessor drains.
    lock_wait_s = std::min(plan.drain_timeout_s + kShutdownGraceS + 30, 3600.0);
  }
  if (key.mode == "rolling") a.push_back("--reuse-port");
  char lock_wait[32];
  std::snprintf(lock_wait, sizeof lock_wait, "%g", lock_wait_s);
  a.insert(a.end(), {"--lock-wait", lock_wait});
  return a;
}

namespace {

// The row's servers: one per node (one unless the row runs several), each with its port
// and, during a deploy, its successor.
class Deployer {
 public:
  Deployer(const RowPlan& plan, std::shared_ptr<RowState> st, Progress& progress)
      : plan_(plan), st_(std::move(st)), progress_(progress), slots_(std::max(plan.nodes, 1)) {}

  // The port of the node session `session`'s client talks to.
  std::uint16_t port_for(int session) const {
    return slots_[static_cast<std::size_t>(session) % slots_.size()].port;
  }

  // Starts every node, one after another, each on a port of its own.
  asio::awaitable<Result<void>> start_first() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      auto started = spawn(i);
      if (!started) co_return std::move(started).error();
      slots_[i].current = std::move(started).value();
      auto port = co_await slots_[i].current->ready(Clock::now() + kStartWait);
      if (!port) {
        auto error = co_await failed_start("did not turn ready", *slots_[i].current);
        co_return error;
      }
      slots_[i].port = *port;
    }
    co_return Result<void>{};
  }

  // Deploy `round` by the row's mode: rolling replaces every node in turn, kill and term
  // the node round % nodes. Returns once each successor is ready and its predecessor gone.
  asio::awaitable<Result<void>> deploy(int round) {
    marked_ = false;
    if (plan_.key.mode == "rolling") {
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto done = co_await replace(i);
        if (!done) co_return done;
      }
      co_return Result<void>{};
    }
    auto done = co_await replace(static_cast<std::size_t>(round) % slots_.size());
    co_return done;
  }

  // SIGTERM to every running server; SIGKILL to one that has not exited in time.
  asio::awaitable<void> stop() {
    for (auto& slot : slots_) {
      if (slot.current) slot.current->signal(SIGTERM);
    }
    auto deadline = Clock::now() + drain_bound();
    for (auto& slot : slots_) {
      if (slot.current) co_await exit_or_kill(*slot.current, deadline);
    }
  }

 private:
  struct Slot {
    std::uint16_t port = 0;
    int generation = 0;
    std::unique_ptr<ServerProcess> current;
  };

  // The next server of slot `i`: on its port (any free one at first), with a new node id
  // when the row runs nodes.
  Result<std::unique_ptr<ServerProcess>> spawn(std::size_t i) {
    auto& slot = slots_[i];
    ++slot.generation;
    std::string node_id;
    if (plan_.nodes > 1) {
      node_id = plan_.node_prefix + "n" + std::to_string(i + 1) + "-" +
                std::to_string(slot.generation);
    }
    return ServerProcess::start(st_->executor, plan_.dorm, serve_args(plan_, slot.port, node_id));
  }

  static Error failed(const std::string& what, const ServerProcess& p) {
    return Error{ErrorCode::io_error, "dorm serve " + what + ": " + p.describe()};
  }

  // A server that did not start has usually exited: its status goes in the message.
  static asio::awaitable<Error> failed_start(const char* what, ServerProcess& p) {
    auto exited = co_await p.exited(Clock::now() + milliseconds(500));
    (void)exited;
    co_return failed(what, p);
  }

  std::chrono::milliseconds drain_bound() const {
    return milliseconds(static_cast<long>((plan_.drain_timeout_s + kShutdownGraceS) * 1000)) +
           kShutdownSlack;
  }

  // A SIGKILL or SIGTERM of the deploy: the first one is the deploy's instant (recorded),
  // and /readyz on the node's port is probed from each.
  asio::awaitable<Clock::time_point> mark_deploy(std::uint16_t port) {
    auto at = Clock::now();
    if (!marked_) {
      st_->run.deploys_ms.push_back(st_->ms(at));
      marked_ = true;
    }
    prober_ = std::make_shared<Prober>();
    auto until = at + drain_bound() + kStartWait;
    auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, probe_readyz(prober_, st_, port, at, until), asio::detached);
    co_return at;
  }

  asio::awaitable<void> stop_prober() {
    if (!prober_) co_return;
    prober_->stop = true;
    auto p = prober_;
    // Captures a plain pointer: g++ 12 destroys a closure passed inside a co_await twice,
    // harmless only for captures with trivial destructors.
    const Prober* probing = p.get();
    co_await st_->changed.until([probing] { return probing->done; }, Clock::now() + seconds(5));
    st_->run.unanswered_ms_max =
        std::max(st_->run.unanswered_ms_max.value_or(0), p->unanswered_ms_max);
    st_->run.unanswered_probes = st_->run.unanswered_probes.value_or(0) + p->unanswered_probes;
    prober_.reset();
  }

  // Waits for `p` to exit by `deadline`; past it, says so and kills it.
  asio::awaitable<void> exit_or_kill(ServerProcess& p, Clock::time_point deadline) {
    auto status = co_await p.exited(deadline);
    if (status) co_return;
    progress_.note("dorm serve (pid " + std::to_string(p.pid()) +
                   ") did not exit in time after SIGTERM; killing it");
    p.signal(SIGKILL);
    co_await p.exited(Clock::now() + kExitWait);
  }

  asio::awaitable<Result<void>> successor_ready(ServerProcess& p) {
    auto port = co_await p.ready(Clock::now() + kStartWait);
    if (!port) {
      auto error = co_await failed_start("(the successor) did not turn ready", p);
      co_return error;
    }
    co_return Result<void>{};
  }

  // Replaces the server of slot `i` by the row's mode.
  asio::awaitable<Result<void>> replace(std::size_t i) {
    auto old = std::move(slots_[i].current);
    Result<void> done;
    if (plan_.key.mode == "kill") {
      done = co_await kill_deploy(i, *old);
    } else if (plan_.key.mode == "term") {
      done = co_await term_deploy(i, *old);
    } else {
      done = co_await rolling_deploy(i, *old);
    }
    co_await stop_prober();
    co_return done;
  }

  // Starts slot `i`'s successor; returns it, ready or not.
  Result<ServerProcess*> start_successor(std::size_t i) {
    auto started = spawn(i);
    if (!started) return std::move(started).error();
    slots_[i].current = std::move(started).value();
    return slots_[i].current.get();
  }

  asio::awaitable<Result<void>> kill_deploy(std::size_t i, ServerProcess& old) {
    old.signal(SIGKILL);
    auto at = co_await mark_deploy(slots_[i].port);
    auto status = co_await old.exited(at + kExitWait);
    if (!status) co_return failed("was not reaped after SIGKILL", old);
    co_await sleep_until(at + milliseconds(plan_.key.restart_gap_ms));
    auto next = start_successor(i);
    if (!next) co_return std::move(next).error();
    auto ready = co_await successor_ready(**next);
    co_return ready;
  }

  asio::awaitable<Result<void>> term_deploy(std::size_t i, ServerProcess& old) {
    old.signal(SIGTERM);
    auto at = co_await mark_deploy(slots_[i].port);
    bool closed = co_await listener_closed(slots_[i].port, at + kExitWait);
    if (!closed) co_return failed("kept accepting connections after SIGTERM", old);
    co_await sleep_until(at + milliseconds(plan_.key.restart_gap_ms));
    auto next = start_successor(i);
    if (!next) co_return std::move(next).error();
    co_await exit_or_kill(old, at + drain_bound());
    auto ready = co_await successor_ready(**next);
    co_return ready;
  }

  asio::awaitable<Result<void>> rolling_deploy(std::size_t i, ServerProcess& old) {
    auto next = start_successor(i);
    if (!next) co_return std::move(next).error();
    bool bound = co_await (*next)->logged("bound", Clock::now() + kStartWait);
    if (!bound) co_return failed("(the successor) did not bind beside its predecessor", **next);
    old.signal(SIGTERM);
    auto at = co_await mark_deploy(slots_[i].port);
    co_await exit_or_kill(old, at + drain_bound());
    auto ready = co_await successor_ready(**next);
    co_return ready;
  }

  const RowPlan& plan_;
  std::shared_ptr<RowState> st_;
  Progress& progress_;
  std::vector<Slot> slots_;
  bool marked_ = false;  // the current deploy's instant is recorded
  std::shared_ptr<Prober> prober_;
};

}  // namespace

namespace {

asio::awaitable<Result<void>> open_sessions(std::shared_ptr<RowState> st, const RowPlan& plan,
                                            const Deployer& deployer) {
  auto deadline = Clock::now() + kStartWait;
  for (int i = 0; i < plan.sessions; ++i)
    st->clients.push_back(std::make_unique<McpClient>(st->executor, kHost, deployer.port_for(i)));
  for (std::size_t i = 0; i < st->clients.size(); ++i)
    asio::co_spawn(st->executor, open_client(st, i, deadline), asio::detached);
  int all = plan.sessions;
  co_await st->changed.until([&] { return st->opened == all; }, deadline + kSettleSlack);
  if (st->opened < all) co_return Error{ErrorCode::io_error, "sessions did not open in time"};
  if (!st->open_error.empty())
    co_return Error{ErrorCode::io_error, "a session did not open: " + st->open_error};
  co_return Result<void>{};
}

// The deploy at `deploy_ms` hit every call of the round (from `first` on) that had no
// outcome by then.
void mark_deployed(RowRun& run, std::size_t first, std::int64_t deploy_ms) {
  for (std::size_t i = first; i < run.calls.size(); ++i) {
    auto& c = run.calls[i].record;
    if (c.outcome.kind == testing::OutcomeKind::pending || c.end_ms >= deploy_ms)
      c.deploy_ms = deploy_ms;
  }
}

// One round: start every session's calls, deploy once all are accepted, wait for every
// outcome.
asio::awaitable<Result<void>> run_round(std::shared_ptr<RowState> st, const RowPlan& plan,
                                        int round, Deployer& deployer, Progress& progress) {
  auto timeout = milliseconds(static_cast<long>(plan.client_timeout_s * 1000));
  std::size_t first = st->run.calls.size();
  st->accepted = 0;
  for (auto& c : round_calls(plan, round)) {
    c.record.session = st->clients[static_cast<std::size_t>(c.session)]->session_id();
    c.record.request_id = std::int64_t{round} * plan.calls_per_session + c.slot + 1;
    st->run.calls.push_back(std::move(c));
  }
  auto deadline = Clock::now() + timeout;
  for (std::size_t i = first; i < st->run.calls.size(); ++i) {
    auto& c = st->run.calls[i].record;
    c.start_ms = st->ms(Clock::now());
    asio::co_spawn(st->executor, run_call(st, i, c.request_id, Clock::now() + timeout, &progress),
                   asio::detached);
  }
  int round_calls = static_cast<int>(st->run.calls.size() - first);
  co_await st->changed.until([&] { return st->accepted == round_calls; }, deadline + kSettleSlack);
  auto deployed = co_await deployer.deploy(round);
  if (!deployed) co_return deployed;
  mark_deployed(st->run, first, st->run.deploys_ms.back());
  int target = static_cast<int>(st->run.calls.size());
  co_await st->changed.until([&] { return st->settled == target; }, deadline + kSettleSlack);
  if (st->settled < target)
    co_return Error{ErrorCode::io_error, "calls were still unsettled past their timeout"};
  co_return Result<void>{};
}

// Closes every client and waits until their coroutines are gone (they end at once: every
// socket is closed and every wait woken). They notify nobody as they end, hence the poll.
asio::awaitable<void> close_clients(std::shared_ptr<RowState> st) {
  for (auto& c : st->clients) c->close();
  auto deadline = Clock::now() + seconds(10);
  while (Clock::now() < deadline && std::any_of(st->clients.begin(), st->clients.end(),
                                                [](const auto& c) { return c->running() > 0; })) {
    co_await sleep_until(Clock::now() + milliseconds(5));
  }
}

asio::awaitable<Result<void>> run_rounds(std::shared_ptr<RowState> st, const RowPlan& plan,
                                         Deployer& deployer, Progress& progress) {
  auto started = co_await deployer.start_first();
  if (!started) co_return started;
  auto opened = co_await open_sessions(st, plan, deployer);
  if (!opened) co_return opened;
  st->t0 = Clock::now();
  int rounds = static_cast<int>(plan.workload->durations_ms.size());
  for (int round = 0; round < rounds; ++round) {
    progress.deploy(round + 1, rounds);
    auto done = co_await run_round(st, plan, round, deployer, progress);
    if (!done) co_return done;
  }
  co_return Result<void>{};
}

}  // namespace

asio::awaitable<Result<RowRun>> run_row(const RowPlan& plan, Progress& progress) {
  auto executor = co_await asio::this_coro::executor;
  auto st = std::make_shared<RowState>(executor);
  st->run.key = plan.key;
  st->run.sessions = plan.sessions;
  st->run.calls_per_session = plan.calls_per_session;
  Deployer deployer(plan, st, progress);
  auto done = co_await run_rounds(st, plan, deployer, progress);
  co_await close_clients(st);
  co_await deployer.stop();
  if (!done) co_return std::move(done).error();
  st->run.end_ms = last_event_ms(st->run);
  co_return std::move(st->run);
}

}  // namespace dorm::deploy_sim
