#include "dorm/mcp/session_id.hpp"

#include <openssl/rand.h>

#include <array>

#include "dorm/hex.hpp"

namespace dorm::mcp {

Result<std::string> new_session_id() {
  std::array<std::uint8_t, kSessionIdRandomBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return Error{ErrorCode::internal, "RAND_bytes failed to produce a session id"};
  }
  return hex_encode(bytes);
}

bool plausible_session_id(std::string_view id) {
  if (id.size() < kMinSessionIdLength || id.size() > kMaxSessionIdLength) return false;
  for (unsigned char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace dorm::mcp
