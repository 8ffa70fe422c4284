// libFuzzer target: TokenSet::parse never crashes; a refusal is an invalid_argument whose
// message starts "auth tokens: "; an accepted set never authenticates an empty token and
// gives the same answer twice for the same token.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dorm/mcp/auth_tokens.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto set = dorm::mcp::TokenSet::parse(text);
  if (!set.ok()) {
    if (set.error().code != dorm::ErrorCode::invalid_argument) std::abort();
    if (!set.error().message.starts_with("auth tokens: ")) std::abort();
    return 0;
  }
  if (set->authenticate("")) std::abort();
  // The input itself as a presented token: exercises hashing and the full scan.
  auto first = set->authenticate(text);
  auto second = set->authenticate(text);
  if (first != second) std::abort();
  return 0;
}
