// Event ids of SSE streams: `<stream>-<seq>`.
//
// `stream` is 64 random bits written as 16 lowercase hex digits, `seq` the event's
// position in that stream in decimal (the priming event is 0). An id names exactly one
// stream, so a `Last-Event-ID` maps straight to the stream to resume, and ids stay unique
// across all streams of a session (MCP 2025-11-25 asks both).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dorm::mcp {

struct EventId {
  std::uint64_t stream = 0;
  std::uint64_t seq = 0;

  // "0123456789abcdef-42".
  std::string to_string() const;
  friend auto operator<=>(const EventId&, const EventId&) = default;
};

// `value` as exactly `digits` lowercase hex digits (the low ones; keys sort numerically).
std::string fixed_hex(std::uint64_t value, int digits);
// Parses lowercase hex digits (1-16) back; none for anything else.
std::optional<std::uint64_t> parse_fixed_hex(std::string_view text);

// The 16 lowercase hex digits of a stream id.
inline std::string stream_key(std::uint64_t stream) { return fixed_hex(stream, 16); }

// Parses an event id as to_string() writes it, and nothing else: exactly 16 lowercase
// hex digits, '-', then a decimal number without leading zeros that fits 64 bits.
// None for anything else (a `Last-Event-ID` that is not ours is answered 400, the same
// for every malformed or unknown id).
std::optional<EventId> parse_event_id(std::string_view text);

}  // namespace dorm::mcp
