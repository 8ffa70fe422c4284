#include "outcome.hpp"

#include <algorithm>
#include <cmath>

namespace dorm::deploy_sim {

std::optional<double> percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

RowSummary summarize(const RowRun& run) {
  RowSummary s;
  s.key = run.key;
  s.unanswered_ms_max = run.unanswered_ms_max;
  s.unanswered_probes = run.unanswered_probes;
  std::vector<double> error_ms;
  for (const auto& c : run.calls) {
    ++s.calls;
    switch (c.outcome.kind) {
      case OutcomeKind::answered:
        ++s.answered;
        break;
      case OutcomeKind::failed:
        ++s.failed_fast;
        ++s.reasons[c.outcome.reason];
        error_ms.push_back(c.after_deploy_ms());
        break;
      case OutcomeKind::hung:
        ++s.hung;
        break;
    }
  }
  s.error_ms_p50 = percentile(error_ms, 0.5);
  s.error_ms_p99 = percentile(error_ms, 0.99);
  return s;
}

}  // namespace dorm::deploy_sim
