#include "virtual_simulation.hpp"

#include <algorithm>
#include <cmath>

#include "dorm/testing/mcp_cluster.hpp"

namespace dorm::deploy_sim {
namespace {

using testing::McpCluster;
using testing::RestartKind;

// The row's one node: every session lives on it, as on the one `dorm serve` of a row.
constexpr std::size_t kNode = 0;

std::int64_t to_ms(double seconds) {
  return std::llround(seconds * 1000);
}

testing::McpClusterOptions cluster_options(const RowPlan& plan) {
  testing::McpClusterOptions o;
  o.nodes = 1;
  // What `dorm serve --no-priming --no-reaper` (no-fix) and `--no-reaper` (priming-only) set.
  o.session.priming = plan.key.variant != "no-fix";
  o.session.reaper = plan.key.variant == "reaper";
  o.session.retry_ms = plan.key.retry_ms;
  o.client.request_timeout_ms = to_ms(plan.client_timeout_s);
  return o;
}

// One deploy of the node by the row's mode (see the header for the mapping).
Result<void> deploy(McpCluster& cluster, const RowPlan& plan) {
  const auto& key = plan.key;
  auto drain_ms = to_ms(plan.drain_timeout_s);
  if (key.mode == "kill") return cluster.restart(kNode, RestartKind::crash, key.restart_gap_ms);
  if (key.mode == "rolling") return cluster.drain_and_restart(kNode, drain_ms, 0);
  auto began = cluster.clock().now_ms();
  if (auto down = cluster.take_down(kNode, RestartKind::graceful, drain_ms); !down) return down;
  auto gap_left = began + key.restart_gap_ms - cluster.clock().now_ms();
  if (gap_left > 0) cluster.advance(gap_left);
  return cluster.bring_up(kNode);
}

// Starts round `round`'s calls: run.calls gets them in order, `started` their indexes in
// cluster.calls().
void start_round(std::vector<testing::McpClient>& clients, const RowPlan& plan, int round,
                 RowRun& run, std::vector<std::size_t>& started) {
  for (auto& c : round_calls(plan, round)) {
    auto& client = clients[static_cast<std::size_t>(c.session)];
    started.push_back(client.call(kCallTool, call_arguments(c.duration_ms)));
    run.calls.push_back(std::move(c));
  }
}

// The cluster's records, on the row's time scale (milliseconds since `t0`).
void copy_records(const McpCluster& cluster, const std::vector<std::size_t>& started,
                  std::int64_t t0, RowRun& run) {
  for (std::size_t i = 0; i < run.calls.size(); ++i) {
    auto record = cluster.calls()[started[i]];
    record.start_ms -= t0;
    record.end_ms -= t0;
    if (record.deploy_ms) *record.deploy_ms -= t0;
    run.calls[i].record = std::move(record);
  }
}

}  // namespace

Result<RowRun> run_virtual_row(const RowPlan& plan, Progress& progress) {
  McpCluster cluster(cluster_options(plan));
  std::vector<testing::McpClient> clients;
  for (int s = 0; s < plan.sessions; ++s) {
    auto client = cluster.open_session("deploy-sim-" + std::to_string(s + 1));
    if (!client) return std::move(client).error();
    clients.push_back(*client);
  }
  RowRun run;
  run.key = plan.key;
  run.sessions = plan.sessions;
  run.calls_per_session = plan.calls_per_session;
  std::vector<std::size_t> started;
  auto t0 = cluster.clock().now_ms();
  int rounds = static_cast<int>(plan.workload->durations_ms.size());
  for (int round = 0; round < rounds; ++round) {
    progress.deploy(round + 1, rounds);
    start_round(clients, plan, round, run, started);
    cluster.run_until_idle();  // every call is accepted and running: the deploy comes now
    run.deploys_ms.push_back(cluster.clock().now_ms() - t0);
    if (auto done = deploy(cluster, plan); !done) return std::move(done).error();
    cluster.settle();
    if (cluster.pending() > 0)
      return Error{ErrorCode::internal, std::to_string(cluster.pending()) +
                                            " calls had no outcome past their client timeout"};
    progress.settled(static_cast<int>(run.calls.size()));
  }
  copy_records(cluster, started, t0, run);
  run.end_ms = last_event_ms(run);
  return run;
}

}  // namespace dorm::deploy_sim
