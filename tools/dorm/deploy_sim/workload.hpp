// The seeded workload of a deploy simulation: how long each call's tool runs.
//
// The generator is SplitMix64 with the range mapped by Lemire's multiply-and-shift, both
// written out here rather than taken from <random>, whose distributions may differ between
// standard libraries: the same seed gives the same workload on every build.
#pragma once

#include <cstdint>
#include <vector>

namespace dorm::deploy_sim {

class SeededRng {
 public:
  explicit SeededRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [lo, hi]; precondition lo <= hi.
  std::int64_t uniform(std::int64_t lo, std::int64_t hi);

 private:
  std::uint64_t state_;
};

// durations_ms[round][session][slot]: every row of a run gets the same workload, so rows
// differ only in the server and the deploy.
struct Workload {
  std::vector<std::vector<std::vector<std::int64_t>>> durations_ms;
};

Workload draw_workload(std::uint64_t seed, int rounds, int sessions, int calls_per_session,
                       std::int64_t min_ms, std::int64_t max_ms);

}  // namespace dorm::deploy_sim
