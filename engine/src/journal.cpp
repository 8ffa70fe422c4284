#include "dorm/engine/journal.hpp"

namespace dorm::engine {

OpenEffects open_effects(const Journal& journal) {
  OpenEffects open;
  for (const auto& entry : journal.entries) {
    if (auto* call = std::get_if<ToolCallEntry>(&entry)) {
      open.calls.push_back(*call);
    } else if (auto* result = std::get_if<ToolResultEntry>(&entry)) {
      std::erase_if(open.calls, [&](const ToolCallEntry& c) { return c.seq == result->seq; });
    } else if (auto* set = std::get_if<TimerSetEntry>(&entry)) {
      open.timers.push_back(*set);
    } else if (auto* clear = std::get_if<TimerClearEntry>(&entry)) {
      std::erase_if(open.timers, [&](const TimerSetEntry& t) { return t.timer == clear->timer; });
    } else if (auto* fired = std::get_if<TimerFiredEntry>(&entry)) {
      std::erase_if(open.timers, [&](const TimerSetEntry& t) { return t.timer == fired->timer; });
    }
  }
  return open;
}

}  // namespace dorm::engine
