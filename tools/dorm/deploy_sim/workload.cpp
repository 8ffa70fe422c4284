#include "workload.hpp"

namespace dorm::deploy_sim {

std::uint64_t SeededRng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::int64_t SeededRng::uniform(std::int64_t lo, std::int64_t hi) {
  auto span = static_cast<std::uint64_t>(hi - lo) + 1;  // 0 when the range is all of int64
  if (span == 0) return static_cast<std::int64_t>(next());
  auto scaled = static_cast<unsigned __int128>(next()) * span;
  return lo + static_cast<std::int64_t>(scaled >> 64);
}

Workload draw_workload(std::uint64_t seed, int rounds, int sessions, int calls_per_session,
                       std::int64_t min_ms, std::int64_t max_ms) {
  SeededRng rng(seed);
  Workload w;
  w.durations_ms.resize(static_cast<std::size_t>(rounds));
  for (auto& round : w.durations_ms) {
    round.resize(static_cast<std::size_t>(sessions));
    for (auto& session : round) {
      for (int i = 0; i < calls_per_session; ++i) session.push_back(rng.uniform(min_ms, max_ms));
    }
  }
  return w;
}

}  // namespace dorm::deploy_sim
