#include "dorm/testing/call_outcome.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>

namespace dorm::testing {

std::string_view to_string(OutcomeKind kind) {
  switch (kind) {
    case OutcomeKind::pending:
      return "pending";
    case OutcomeKind::answered:
      return "answered";
    case OutcomeKind::failed:
      return "failed";
    case OutcomeKind::hung:
      return "hung";
  }
  return "?";
}

Outcome outcome_of_error(std::string_view error_json) {
  Outcome out{OutcomeKind::failed, 0, {}};
  rapidjson::Document doc;
  doc.Parse(error_json.data(), error_json.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    if (auto code = doc.FindMember("code"); code != doc.MemberEnd() && code->value.IsInt()) {
      out.code = code->value.GetInt();
    }
    if (auto data = doc.FindMember("data"); data != doc.MemberEnd() && data->value.IsObject()) {
      auto reason = data->value.FindMember("reason");
      if (reason != data->value.MemberEnd() && reason->value.IsString()) out.reason = reason->value.GetString();
    }
  }
  if (out.reason.empty()) out.reason = "code " + std::to_string(out.code);
  return out;
}

std::optional<std::int64_t> CallRecord::after_deploy_ms() const {
  if (!deploy_ms || outcome.kind == OutcomeKind::pending) return std::nullopt;
  return end_ms - *deploy_ms;
}

std::optional<std::int64_t> percentile(std::vector<std::int64_t> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

OutcomeSummary summarize(const std::vector<CallRecord>& calls) {
  OutcomeSummary row;
  std::vector<std::int64_t> error_ms;
  for (const auto& call : calls) {
    ++row.calls;
    switch (call.outcome.kind) {
      case OutcomeKind::pending:
        ++row.pending;
        break;
      case OutcomeKind::answered:
        ++row.answered;
        break;
      case OutcomeKind::hung:
        ++row.hung;
        break;
      case OutcomeKind::failed:
        ++row.failed;
        ++row.reasons[call.outcome.reason];
        if (auto ms = call.after_deploy_ms()) error_ms.push_back(*ms);
        break;
    }
  }
  row.error_ms_p50 = percentile(error_ms, 0.5);
  row.error_ms_p99 = percentile(error_ms, 0.99);
  row.error_ms_max = percentile(error_ms, 1.0);
  return row;
}

}  // namespace dorm::testing
