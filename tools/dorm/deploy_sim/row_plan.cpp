#include "row_plan.hpp"

namespace dorm::deploy_sim {

std::string call_arguments(std::int64_t duration_ms) {
  return "{\"ms\":" + std::to_string(duration_ms) + "}";
}

std::vector<SimCall> round_calls(const RowPlan& plan, int round) {
  const auto& durations = plan.workload->durations_ms[static_cast<std::size_t>(round)];
  std::vector<SimCall> calls;
  for (int s = 0; s < plan.sessions; ++s) {
    for (int k = 0; k < plan.calls_per_session; ++k) {
      SimCall c;
      c.session = s;
      c.slot = k;
      c.round = round;
      c.duration_ms = durations[static_cast<std::size_t>(s)][static_cast<std::size_t>(k)];
      c.record.tool = kCallTool;
      calls.push_back(std::move(c));
    }
  }
  return calls;
}

}  // namespace dorm::deploy_sim
