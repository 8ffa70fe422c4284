// `dorm bench eviction`: resident memory stays flat when a resident budget evicts.
#pragma once

namespace dorm::bench {

struct EvictionBenchOptions {
  int rounds = 5;
  int objects = 100'000;
  int budget = 10'000;
  int workers = 2;
  int in_flight = 100;  // requests outstanding at once while touching
};

int run_eviction_bench(const EvictionBenchOptions& options);

}  // namespace dorm::bench
