#include "dorm/mcp/event_id.hpp"

#include <charconv>

namespace dorm::mcp {

std::string fixed_hex(std::uint64_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kHex[value & 0xf];
    value >>= 4;
  }
  return out;
}

std::optional<std::uint64_t> parse_fixed_hex(std::string_view text) {
  if (text.empty() || text.size() > 16) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  return value;
}

std::string EventId::to_string() const { return stream_key(stream) + "-" + std::to_string(seq); }

std::optional<EventId> parse_event_id(std::string_view text) {
  if (text.size() < 18 || text.size() > 16 + 1 + 20 || text[16] != '-') return std::nullopt;
  auto stream = parse_fixed_hex(text.substr(0, 16));
  if (!stream) return std::nullopt;
  EventId id;
  id.stream = *stream;
  std::string_view seq = text.substr(17);
  if (seq.size() > 1 && seq[0] == '0') return std::nullopt;
  for (char c : seq) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  auto [end, ec] = std::from_chars(seq.data(), seq.data() + seq.size(), id.seq);
  if (ec != std::errc() || end != seq.data() + seq.size()) return std::nullopt;
  return id;
}

}  // namespace dorm::mcp
