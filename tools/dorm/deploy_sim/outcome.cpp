#include "outcome.hpp"

#include <algorithm>

namespace dorm::deploy_sim {

RowSummary summarize(const RowRun& run) {
  std::vector<testing::CallRecord> records;
  records.reserve(run.calls.size());
  for (const auto& c : run.calls) records.push_back(c.record);
  return RowSummary{run.key, testing::summarize(records), run.unanswered_ms_max,
                    run.unanswered_probes};
}

std::int64_t last_event_ms(const RowRun& run) {
  std::int64_t end = 0;
  for (const auto& c : run.calls) end = std::max(end, c.record.end_ms);
  for (auto d : run.deploys_ms) end = std::max(end, d);
  return end;
}

}  // namespace dorm::deploy_sim
