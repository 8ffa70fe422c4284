#include "dorm/mcp/session_id.hpp"

#include <openssl/rand.h>

#include <array>

namespace dorm::mcp {

Result<std::string> new_session_id() {
  std::array<unsigned char, kSessionIdRandomBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return Error{ErrorCode::internal, "RAND_bytes failed to produce a session id"};
  }
  constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(2 * bytes.size());
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 0x0f];
  }
  return id;
}

bool plausible_session_id(std::string_view id) {
  if (id.size() < kMinSessionIdLength || id.size() > kMaxSessionIdLength) return false;
  for (unsigned char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace dorm::mcp
