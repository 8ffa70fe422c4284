#include "dorm/mcp/event_id.hpp"

#include <charconv>

namespace dorm::mcp {

std::string stream_key(std::uint64_t stream) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kHex[stream & 0xf];
    stream >>= 4;
  }
  return out;
}

std::string EventId::to_string() const { return stream_key(stream) + "-" + std::to_string(seq); }

std::optional<EventId> parse_event_id(std::string_view text) {
  if (text.size() < 18 || text.size() > 16 + 1 + 20 || text[16] != '-') return std::nullopt;
  EventId id;
  for (std::size_t i = 0; i < 16; ++i) {
    char c = text[i];
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    id.stream = id.stream << 4 | static_cast<std::uint64_t>(digit);
  }
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
