#include "client_rules.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>

namespace dorm::deploy_sim {

std::int64_t reconnect_delay_ms(const ReconnectOptions& options, int attempt,
                                std::optional<std::int64_t> server_retry_ms) {
  if (server_retry_ms) return *server_retry_ms;
  double delay = static_cast<double>(options.initial_delay_ms) *
                 std::pow(options.grow_factor, static_cast<double>(attempt));
  return std::min(static_cast<std::int64_t>(delay), options.max_delay_ms);
}

bool resumes_after_end(bool reconnectable, bool carried_event_id, bool received_result) {
  return (reconnectable || carried_event_id) && !received_result;
}

ResumeAnswer classify_resume(int http_status, bool has_body) {
  if (http_status == 405) return ResumeAnswer::abandoned;
  if (http_status < 200 || http_status > 299) return ResumeAnswer::failed;
  return has_body ? ResumeAnswer::stream : ResumeAnswer::finished;
}

std::string_view to_string(OutcomeKind kind) {
  switch (kind) {
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
  if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("code") && doc["code"].IsInt())
    out.code = doc["code"].GetInt();
  if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("data") && doc["data"].IsObject()) {
    const auto& data = doc["data"];
    if (data.HasMember("reason") && data["reason"].IsString())
      out.reason = data["reason"].GetString();
  }
  if (out.reason.empty()) out.reason = "code " + std::to_string(out.code);
  return out;
}

}  // namespace dorm::deploy_sim
