// One row of `dorm deploy-sim`: real `dorm serve` processes on loopback over a fresh store,
// simulated SDK clients, and rounds of calls with a deploy in the middle of each.
//
// A round: every session starts its calls (durations from the seeded workload); once the
// server has accepted all of them (each POST has its response header, so each call is
// journaled and running), the deploy happens, and the round ends when every call has its
// outcome — a result, an error, or its client's timeout. No call starts during a deploy,
// so every call of a round is exposed to exactly one deploy and nothing is refused.
//
// Deploy modes (the successor always gets the same port and the same store):
//  - kill: SIGKILL, reap, wait until the restart gap has passed since the kill, start the
//    successor;
//  - term: SIGTERM (the old process drains), wait until its listener is closed and the gap
//    has passed, start the successor, which waits for the store lock;
//  - rolling: start the successor with --reuse-port beside the old one (also started with
//    it), wait until it is bound, then SIGTERM the old one; the gap does not apply.
// The deploy instant (drawn on the timeline, and the zero of "time to error") is the
// SIGKILL or SIGTERM.
//
// With several nodes (RowPlan::nodes) every node keeps its port, and a successor gets a new
// node id. A rolling deploy replaces every node in turn (its instant is the first SIGTERM);
// a kill or term deploy hits one node, round r hitting node r % nodes.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "dorm/result.hpp"
#include "outcome.hpp"
#include "progress.hpp"
#include "row_plan.hpp"

namespace dorm::deploy_sim {

// How often /readyz is probed during a deploy (RowRun::unanswered_ms_max's resolution).
inline constexpr int kReadyzProbeMs = 25;
// What `dorm serve` is told to allow a drain beyond --drain-timeout before it must exit.
inline constexpr double kShutdownGraceS = 5;

// The arguments of one `dorm serve` of `plan` on `port` (0: any free one); `node_id` is
// set when the row runs several nodes.
std::vector<std::string> serve_args(const RowPlan& plan, std::uint16_t port,
                                    const std::string& node_id = {});

// Runs the row. Errors: a server that does not start or does not answer as it should, a
// session that cannot open; every process the row started is gone when it returns.
boost::asio::awaitable<Result<RowRun>> run_row(const RowPlan& plan, Progress& progress);

}  // namespace dorm::deploy_sim
