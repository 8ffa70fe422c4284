#include "alarm_records.hpp"

#include <charconv>

namespace dorm::detail {

std::string encode_record(const AlarmRecord& r) {
  return std::to_string(r.due_ms) + " " + r.version;
}

std::optional<AlarmRecord> decode_record(std::string_view text) {
  auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  AlarmRecord r;
  auto [end, ec] = std::from_chars(text.data(), text.data() + space, r.due_ms);
  if (ec != std::errc{} || end != text.data() + space) return std::nullopt;
  r.version = std::string(text.substr(space + 1));
  return r;
}

std::string encode_index_key(const AlarmIndexKey& k) {
  // Offset so that negative times (never produced by a sane clock) still sort first.
  auto biased = static_cast<std::uint64_t>(k.due_ms) ^ (std::uint64_t{1} << 63);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(biased >> (56 - 8 * i));
  out.append(k.ns).push_back('\0');
  out.append(k.body);
  out.append(k.name);
  return out;
}

std::optional<std::int64_t> decode_due(std::string_view key) {
  if (key.size() < 8) return std::nullopt;
  std::uint64_t biased = 0;
  for (int i = 0; i < 8; ++i) biased = biased << 8 | static_cast<unsigned char>(key[static_cast<std::size_t>(i)]);
  return static_cast<std::int64_t>(biased ^ (std::uint64_t{1} << 63));
}

std::optional<AlarmIndexKey> decode_index_key(std::string_view key) {
  if (key.size() < 8 + 1 + ObjectId::kBodyBytes) return std::nullopt;
  AlarmIndexKey k;
  k.due_ms = *decode_due(key);
  std::string_view rest = key.substr(8);
  auto nul = rest.find('\0');
  if (nul == std::string_view::npos || rest.size() < nul + 1 + ObjectId::kBodyBytes) return std::nullopt;
  k.ns = std::string(rest.substr(0, nul));
  k.body = std::string(rest.substr(nul + 1, ObjectId::kBodyBytes));
  k.name = std::string(rest.substr(nul + 1 + ObjectId::kBodyBytes));
  return k;
}

}  // namespace dorm::detail
