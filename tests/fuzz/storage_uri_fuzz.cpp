// libFuzzer target: parse_storage_uri never crashes, and what it accepts prints to a
// canonical form that parses back to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dorm/storage/storage_uri.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = dorm::storage::parse_storage_uri(text);
  if (!parsed.ok()) {
    if (parsed.error().message.empty()) std::abort();
    return 0;
  }
  auto again = dorm::storage::parse_storage_uri(parsed->to_string());
  if (!again.ok() || !(*again == *parsed)) std::abort();
  return 0;
}
