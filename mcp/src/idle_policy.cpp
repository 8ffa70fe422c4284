#include "dorm/mcp/idle_policy.hpp"

#include <algorithm>

namespace dorm::mcp {

IdleDecision decide(const IdlePolicy& policy, const IdleInput& in) {
  const std::int64_t idle = in.now_ms - in.last_activity_ms;
  const std::int64_t idle_after = policy.idle_after.count();
  const std::int64_t paused_limit = policy.paused_limit.count();
  const std::int64_t busy_limit = policy.busy_limit.count();
  const std::int64_t step = policy.step.count();
  auto wait = [&](std::int64_t for_ms, int row) {
    return IdleDecision{IdleDecision::Action::wait,
                        in.now_ms + std::max<std::int64_t>(for_ms, policy.min_wait.count()), row};
  };
  auto dispose = [](int row) { return IdleDecision{IdleDecision::Action::dispose, 0, row}; };

  if (idle < idle_after) return wait(idle_after - idle, 1);
  if (in.paused_work && idle < paused_limit) return wait(std::min(step, paused_limit - idle), 2);
  if (in.paused_work) return dispose(3);
  if (in.busy && idle < busy_limit) return wait(std::min(step, busy_limit - idle), 4);
  return dispose(5);
}

}  // namespace dorm::mcp
