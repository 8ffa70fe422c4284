// Lower-case hexadecimal text of bytes: the one spelling dorm writes wherever bytes become
// text (object ids, trace context, cursors, session ids, store keys shown to people), and
// the only one it reads back, so every value has exactly one spelling.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dorm {

// Two lower-case hex digits per byte, most significant nibble first.
std::string hex_encode(std::span<const std::uint8_t> bytes);
std::string hex_encode(std::string_view bytes);

// Fills `out` from `text`; true only if `text` is exactly 2 * out.size() lower-case hex
// digits. Upper case is refused. On false, `out` is unspecified.
bool hex_decode(std::string_view text, std::span<std::uint8_t> out);

// The bytes `text` spells; none if its length is odd or it holds anything but lower-case
// hex digits.
std::optional<std::string> hex_decode(std::string_view text);

}  // namespace dorm
