// libFuzzer target: parse_listen_address never crashes, and what it accepts prints back
// to text that parses to the same address.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dorm/mcp/listen_address.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = dorm::mcp::parse_listen_address(text);
  if (!parsed.ok()) return 0;
  auto again = dorm::mcp::parse_listen_address(parsed->to_string());
  if (!again.ok() || again->host != parsed->host || again->port != parsed->port) std::abort();
  return 0;
}
