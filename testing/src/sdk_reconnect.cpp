#include "dorm/testing/sdk_reconnect.hpp"

#include <algorithm>
#include <cmath>

namespace dorm::testing {

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

}  // namespace dorm::testing
