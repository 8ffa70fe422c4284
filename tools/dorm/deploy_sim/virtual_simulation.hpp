// One row of `dorm deploy-sim --virtual`: the same rounds as simulation.hpp, run in this
// process on virtual time by a testing::McpCluster of one node, with no processes and no
// sockets. A row of 50 sessions and 3 deploys takes a fraction of a second of real time,
// however long its calls, drains and client timeouts are.
//
// What maps to what:
//  - variants: the session options that `dorm serve --no-priming` and `--no-reaper` set
//    (no-fix: neither priming nor the reaper; priming-only: no reaper; reaper: both);
//  - retry hint and client timeout: the sessions' retry_ms and the clients' request
//    timeout; the clients follow the SDK's reconnect rules as the process mode's do;
//  - a round: every session starts its calls at one instant, the node has accepted all of
//    them once the cluster is idle at that instant, and the deploy follows at once;
//  - kill: McpCluster::restart(node, crash, restart gap);
//  - term: a graceful take_down with a drain window of --drain-timeout, the node back up
//    once the restart gap has passed since the deploy began (as the process mode starts
//    its successor the gap after the SIGTERM), or at once when the drain took longer;
//  - rolling: McpCluster::drain_and_restart with no gap: the node is back the instant the
//    drain ends.
// Nothing listens on a port, so the row's unanswered_* are left unset.
#pragma once

#include "dorm/result.hpp"
#include "outcome.hpp"
#include "progress.hpp"
#include "row_plan.hpp"

namespace dorm::deploy_sim {

// Runs the row (plan.dorm and plan.dir are not used). Errors: a session that does not
// open, a deploy the cluster refuses, calls with no outcome past their client timeout.
Result<RowRun> run_virtual_row(const RowPlan& plan, Progress& progress);

}  // namespace dorm::deploy_sim
