#include "dorm/mcp/session_keys.hpp"

#include <cstdio>

#include "dorm/mcp/event_id.hpp"

namespace dorm::mcp::session_keys {
namespace {

std::string join(std::string_view prefix, std::string_view rest) {
  std::string key;
  key.reserve(prefix.size() + rest.size());
  key.append(prefix).append(rest);
  return key;
}

// The part after `prefix`; nullopt if `key` is not under it or nothing follows.
std::optional<std::string_view> after(std::string_view prefix, std::string_view key) {
  if (!key.starts_with(prefix) || key.size() == prefix.size()) return std::nullopt;
  return key.substr(prefix.size());
}

constexpr std::size_t kHexDigits = 16;

}  // namespace

std::string stream_record(std::uint64_t stream) { return join(kStreams, stream_key(stream)); }

std::optional<std::uint64_t> parse_stream_record(std::string_view key) {
  auto rest = after(kStreams, key);
  if (!rest || rest->size() != kHexDigits) return std::nullopt;
  return parse_fixed_hex(*rest);
}

std::string stream_events(std::uint64_t stream) { return join(kEvents, stream_key(stream) + "/"); }

std::string event(std::uint64_t stream, std::uint64_t seq) {
  return stream_events(stream) + fixed_hex(seq, kHexDigits) + "/";
}

std::string event_chunk(std::uint64_t stream, std::uint64_t seq, std::uint32_t chunk) {
  return event(stream, seq) + fixed_hex(chunk, 4);
}

std::optional<std::uint64_t> parse_event_seq(std::uint64_t stream, std::string_view key) {
  auto rest = after(stream_events(stream), key);
  if (!rest || rest->size() < kHexDigits + 1 || (*rest)[kHexDigits] != '/') return std::nullopt;
  return parse_fixed_hex(rest->substr(0, kHexDigits));
}

std::string journal(const RequestId& request) { return join(kJournal, request.to_key()); }

std::optional<std::string_view> journal_request_key(std::string_view key) { return after(kJournal, key); }

std::string subscription(std::string_view uri) { return join(kSubscriptions, uri); }

std::optional<std::string_view> parse_subscription(std::string_view key) { return after(kSubscriptions, key); }

std::string tool_data(std::string_view key) { return join(kToolData, key); }

std::string code_data(std::string_view key) { return join(kCodeData, key); }

std::optional<std::string_view> parse_code_data(std::string_view key) { return after(kCodeData, key); }

std::string execution(std::string_view id) { return join(kExecutions, id); }

std::string execution_journal_chunk(std::string_view id, std::uint32_t n) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%06u", n);
  return join(kExecutionJournals, std::string(id) + "/" + digits);
}

std::string settled(std::string_view id) { return join(kSettled, id); }

std::optional<std::string_view> parse_settled(std::string_view key) { return after(kSettled, key); }

std::string approval_answer(std::string_view id) { return join(kApprovalAnswers, id); }

std::string approval_alarm(std::string_view id) { return join(kApprovalAlarms, id); }

std::optional<std::string_view> parse_approval_alarm(std::string_view name) {
  return after(kApprovalAlarms, name);
}

}  // namespace dorm::mcp::session_keys
