// `dorm bench boot`: how long a restarted `dorm serve` takes to bind and to turn ready over
// a store of many sessions, some of them left with calls in flight by a SIGKILL
// (see boot_bench.cpp).
#pragma once

#include <string>

namespace dorm::bench {

struct BootBenchOptions {
  std::string dir;          // working directory (a temporary one when empty)
  int rounds = 5;           // each figure is the median (and max) over the rounds
  int sessions = 100'000;   // sessions stored
  int in_flight = 100;      // of which this many hold a call killed in flight
  int wait_s = 60;          // bound on every wait for the child (bind, ready)
};

int run_boot_bench(const BootBenchOptions& options);

}  // namespace dorm::bench
