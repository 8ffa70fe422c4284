#include "dorm/mcp/reap_telemetry.hpp"

#include "dorm/runtime/log.hpp"

namespace dorm::mcp {

void record_reap(trace::Span& span, const ReapReport& report, std::string_view session,
                 std::uint64_t generation) {
  const std::string reason = report.reason();
  span.set_attribute(reap_attr::kSession, std::string(session));
  span.set_attribute(reap_attr::kStreams, static_cast<std::int64_t>(report.streams));
  span.set_attribute(reap_attr::kRequests, static_cast<std::int64_t>(report.requests));
  span.set_attribute(reap_attr::kDeadGeneration,
                     static_cast<std::int64_t>(report.dead_generation()));
  span.set_attribute(reap_attr::kReason, reason);
  span.set_attribute(reap_attr::kDropped,
                     static_cast<std::int64_t>(report.answered + report.stream_gone));
  if (report.requests > 0) {
    span.record_exception(kRestartReapException, describe(report));
  } else if (!report.failure) {
    span.set_status(trace::SpanStatus::ok);
  }
  log::emit(report.requests > 0 ? spdlog::level::warn : spdlog::level::info, "restart_reap",
            {{"session", session},
             {"streams", report.streams},
             {"requests", report.requests},
             {"dead_generation", report.dead_generation()},
             {"reason", reason},
             {"answered", report.answered},
             {"stream_gone", report.stream_gone},
             {"standalone", report.standalone},
             {"generation", generation}});
  if (report.failure) {
    log::error("restart_reap_failed",
               {{"session", session}, {"error", report.failure->describe()}});
    span.record_exception(kReapFailedException, report.failure->describe());
  }
  span.end();
}

void log_unreadable(const Reaper::Plan& plan, std::string_view session) {
  for (const auto& [key, error] : plan.unreadable) {
    log::error("journal_record_unreadable",
               {{"session", session}, {"key", key}, {"error", error.message}});
  }
}

}  // namespace dorm::mcp
