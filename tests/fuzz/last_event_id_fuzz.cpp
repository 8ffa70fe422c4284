// libFuzzer target: parse_event_id never crashes, and what it accepts prints back byte
// for byte (so one id has one spelling, and a stored id always matches its header).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dorm/mcp/event_id.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto id = dorm::mcp::parse_event_id(text);
  if (!id) return 0;
  if (id->to_string() != text) std::abort();
  return 0;
}
