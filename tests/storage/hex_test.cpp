#include "dorm/hex.hpp"

#include <doctest/doctest.h>

#include <array>
#include <string>

using dorm::hex_decode;
using dorm::hex_encode;

TEST_CASE("hex: every byte as two lower-case digits, and back") {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string text = hex_encode(all);
  CHECK(text.size() == 512);
  CHECK(text.substr(0, 6) == "000102");
  CHECK(text.substr(text.size() - 6) == "fdfeff");
  CHECK(hex_decode(text) == all);
  CHECK(hex_encode(std::string_view{}).empty());
  CHECK(hex_decode("") == std::string{});
}

TEST_CASE("hex: byte arrays in place") {
  const std::array<std::uint8_t, 3> bytes{0x0a, 0xbc, 0xff};
  CHECK(hex_encode(bytes) == "0abcff");
  std::array<std::uint8_t, 3> back{};
  REQUIRE(hex_decode("0abcff", back));
  CHECK(back == bytes);
  CHECK_FALSE(hex_decode("0abc", back));      // too short for the array
  CHECK_FALSE(hex_decode("0abcff00", back));  // too long
}

TEST_CASE("hex: only lower-case hex digits, in pairs") {
  for (std::string_view bad : {"0", "abc", "0A", "FF", "0g", "x0", " 0", "0-", "+1"}) {
    CAPTURE(bad);
    CHECK_FALSE(hex_decode(bad).has_value());
  }
  std::array<std::uint8_t, 1> one{};
  CHECK_FALSE(hex_decode("Ab", one));
}
