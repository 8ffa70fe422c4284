// The crash loop itself: one `dorm serve` at a time on a fixed loopback port and one
// store; per cycle, load, a SIGKILL at a seeded moment, a successor on the same store, and
// the checks once every call the kill hit has ended:
//
//  - the successor reaches ready (its store opened: nothing to repair by hand);
//  - every call the kill hit ended (result, error or the reaper's -32001) within R + 2 s
//    of the successor's ready line, and no other call reached its client's timeout;
//  - every session opened so far still answers ledger_read with its id, and what it reads
//    back agrees with its client-side ledger (ledger_check.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdio>
#include <string>

#include "torture.hpp"
#include "torture_report.hpp"

namespace dorm::torture {

struct LoopPlan {
  TortureOptions options;
  std::string dorm;         // the server binary
  std::string storage_uri;  // the template filled in
};

// Runs every cycle (or until a server does not turn ready, or the time limit) and returns
// what it counted; progress and findings go to `progress`, a line each.
boost::asio::awaitable<TortureTotals> run_crash_loop(const LoopPlan& plan, std::FILE* progress);

}  // namespace dorm::torture
