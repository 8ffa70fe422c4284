// Telemetry of the restart reaper: its span and its log lines.
//
// A reap that finds dead work runs inside a span `restart_reap` (the session object
// starts it, under its activation span). When any request was reaped the span ends with
// status ERROR on purpose — work died unanswered, and whoever watches errors should see
// it — with an exception event of type `dorm.ServerRestart` whose message is
// describe(report); a reap that only dropped records ends OK. A log line `restart_reap`
// (warning when requests were reaped, else info) carries the same facts. A reap that
// failed adds an exception `dorm.ReapFailed` and a `restart_reap_failed` error line.
#pragma once

#include <cstdint>
#include <string_view>

#include "dorm/mcp/reaper.hpp"
#include "dorm/runtime/tracing.hpp"

namespace dorm::mcp {

inline constexpr const char* kRestartReapSpan = "restart_reap";
inline constexpr const char* kRestartReapException = "dorm.ServerRestart";
inline constexpr const char* kReapFailedException = "dorm.ReapFailed";

// Attributes of the restart_reap span.
namespace reap_attr {
inline constexpr const char* kSession = "mcp.session";  // the session object's id
inline constexpr const char* kStreams = "mcp.reap.streams";
inline constexpr const char* kRequests = "mcp.reap.requests";
inline constexpr const char* kDeadGeneration = "mcp.reap.dead_generation";  // the newest
inline constexpr const char* kReason = "mcp.reap.reason";
inline constexpr const char* kDropped = "mcp.reap.dropped";  // answered + stream_gone
}  // namespace reap_attr

// Sets `span`'s attributes and status from `report`, ends it, and writes the log lines.
// `session` names the session (its object id); `generation` is the running one.
void record_reap(trace::Span& span, const ReapReport& report, std::string_view session,
                 std::uint64_t generation);

// Logs `journal_record_unreadable` (error) for each record find() could not read: they are
// left in place, never guessed at, so an operator has to look.
void log_unreadable(const Reaper::Plan& plan, std::string_view session);

}  // namespace dorm::mcp
