#pragma once
// The key layout of one MCP session object: every key and alarm name the session writes
// is built here, and every key it reads back from a listing is parsed here, so the whole
// layout can be read in one place (docs/architecture.md shows the same table).
//
// Keys are relative to the session object's own prefix (the runtime adds it):
//
//   meta                          SessionMeta JSON (session_meta.hpp)
//   a                             the last client request's time, Unix ms, decimal
//   g                             the standalone GET stream's cursor (an event id)
//   n                             stream ids: salt and reservation (stream_ids.hpp)
//   l/<stream>                    a stream's record; <stream> is 16 lowercase hex digits
//   e/<stream>/<seq>/<chunk>      one chunk of one event; <seq> 16 hex, <chunk> 4 hex
//   j/<request>                   an in-flight journal record; <request> is RequestId::to_key
//   s/<uri>                       a resource subscription
//   t/<key>                       a tool's own storage (ToolStorage)
//   c/<key>                       `execute` code's storage (tools.storage.*)
//   x/r/<execution>               an execution's record (running or paused)
//   x/j/<execution>/<n>           chunk n (6 decimal digits) of its journal
//   x/o/<execution>               a settled execution's outcome, kept for late resumes
//   approval-response:<execution> an answer from the approval page, waiting for its turn
//
// Alarms: "idle" (the idle policy), "streams" (finished streams' retention) and
// "approval/<execution>" (a paused execution's deadline).
//
// Fixed-width hex and decimal parts keep each family in numeric order under the store's
// byte order, which the event log's range scans rely on.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/mcp/jsonrpc.hpp"

namespace dorm::mcp::session_keys {

inline constexpr std::string_view kMeta = "meta";
inline constexpr std::string_view kLastActivity = "a";
inline constexpr std::string_view kStandaloneCursor = "g";
inline constexpr std::string_view kStreamIds = "n";

// Prefixes of the families, for listings.
inline constexpr std::string_view kStreams = "l/";
inline constexpr std::string_view kEvents = "e/";
inline constexpr std::string_view kJournal = "j/";
inline constexpr std::string_view kSubscriptions = "s/";
inline constexpr std::string_view kToolData = "t/";
inline constexpr std::string_view kCodeData = "c/";
inline constexpr std::string_view kExecutions = "x/r/";
inline constexpr std::string_view kExecutionJournals = "x/j/";
inline constexpr std::string_view kSettled = "x/o/";
inline constexpr std::string_view kApprovalAnswers = "approval-response:";

// Alarm names.
inline constexpr std::string_view kIdleAlarm = "idle";
inline constexpr std::string_view kRetentionAlarm = "streams";
inline constexpr std::string_view kApprovalAlarms = "approval/";

// ---- streams and events ----
std::string stream_record(std::uint64_t stream);
// The stream a key listed under kStreams names; nullopt for a malformed one.
std::optional<std::uint64_t> parse_stream_record(std::string_view key);

// "e/<stream>/": every event of one stream.
std::string stream_events(std::uint64_t stream);
// "e/<stream>/<seq>/": every chunk of one event.
std::string event(std::uint64_t stream, std::uint64_t seq);
std::string event_chunk(std::uint64_t stream, std::uint64_t seq, std::uint32_t chunk);
// The seq of a key listed under stream_events(stream); nullopt if it is not one of them.
std::optional<std::uint64_t> parse_event_seq(std::uint64_t stream, std::string_view key);

// ---- the in-flight journal and subscriptions ----
std::string journal(const RequestId& request);
// The request a key listed under kJournal names, as RequestId::to_key wrote it (not yet
// decoded: listings report a key that names no request id as a problem of its own).
std::optional<std::string_view> journal_request_key(std::string_view key);

std::string subscription(std::string_view uri);
std::optional<std::string_view> parse_subscription(std::string_view key);

// ---- storage handed to tools and to code ----
std::string tool_data(std::string_view key);
std::string code_data(std::string_view key);
std::optional<std::string_view> parse_code_data(std::string_view key);

// ---- code mode ----
std::string execution(std::string_view id);
std::string execution_journal_chunk(std::string_view id, std::uint32_t n);
std::string settled(std::string_view id);
std::optional<std::string_view> parse_settled(std::string_view key);
std::string approval_answer(std::string_view id);
std::string approval_alarm(std::string_view id);
// The execution an "approval/<id>" alarm belongs to; nullopt for any other alarm.
std::optional<std::string_view> parse_approval_alarm(std::string_view name);

}  // namespace dorm::mcp::session_keys
