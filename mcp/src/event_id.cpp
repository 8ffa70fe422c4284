#include "dorm/mcp/event_id.hpp"

#include <array>
#include <cassert>
#include <charconv>

#include "dorm/hex.hpp"

namespace dorm::mcp {

// The hex of a number is the hex of its bytes, most significant first, so both directions
// go through the one byte encoder: 16 digits, of which fixed_hex keeps the low ones.
constexpr std::size_t kDigits = 2 * sizeof(std::uint64_t);

std::string fixed_hex(std::uint64_t value, int digits) {
  assert(digits >= 0 && static_cast<std::size_t>(digits) <= kDigits);
  std::array<std::uint8_t, sizeof(std::uint64_t)> bytes{};
  for (auto b = bytes.rbegin(); b != bytes.rend(); ++b, value >>= 8) {
    *b = static_cast<std::uint8_t>(value);
  }
  return hex_encode(bytes).substr(kDigits - static_cast<std::size_t>(digits));
}

std::optional<std::uint64_t> parse_fixed_hex(std::string_view text) {
  if (text.empty() || text.size() > kDigits) return std::nullopt;
  std::array<std::uint8_t, sizeof(std::uint64_t)> bytes{};
  if (!hex_decode(std::string(kDigits - text.size(), '0').append(text), bytes)) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (std::uint8_t b : bytes) value = value << 8 | b;
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
