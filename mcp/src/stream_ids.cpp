#include "dorm/mcp/stream_ids.hpp"

#include <openssl/rand.h>

#include "dorm/mcp/event_id.hpp"
#include "dorm/mcp/session_keys.hpp"

namespace dorm::mcp {
namespace {

constexpr std::size_t kHexDigits = 16;

}  // namespace

std::string StreamIdReservation::encode() const {
  return fixed_hex(salt, kHexDigits) + " " + fixed_hex(reserved, kHexDigits);
}

Result<StreamIdReservation> StreamIdReservation::decode(std::string_view text) {
  auto bad = Error{ErrorCode::corruption,
                   "stream id reservation '" + std::string(text.substr(0, 64)) + "' is malformed"};
  if (text.size() != 2 * kHexDigits + 1 || text[kHexDigits] != ' ') return bad;
  auto salt = parse_fixed_hex(text.substr(0, kHexDigits));
  auto reserved = parse_fixed_hex(text.substr(kHexDigits + 1));
  if (!salt || !reserved) return bad;
  return StreamIdReservation{*salt, *reserved};
}

Result<std::uint64_t> StreamIds::next() {
  if (!loaded_) {
    auto raw = store_.get(session_keys::kStreamIds);
    if (!raw) return std::move(raw).error();
    Loaded loaded;
    if (*raw) {
      auto stored = StreamIdReservation::decode(**raw);
      if (!stored) return std::move(stored).error();
      loaded.stored = *stored;
    } else if (RAND_bytes(reinterpret_cast<unsigned char*>(&loaded.stored.salt),
                          sizeof loaded.stored.salt) != 1) {
      return Error{ErrorCode::internal, "RAND_bytes failed to draw a stream id salt"};
    }
    loaded.next = loaded.stored.reserved;
    loaded_ = loaded;
  }
  if (loaded_->next == loaded_->stored.reserved) {
    StreamIdReservation extended{loaded_->stored.salt, loaded_->stored.reserved + kStreamIdBlock};
    if (auto ok = store_.put(session_keys::kStreamIds, extended.encode()); !ok) {
      return std::move(ok).error();
    }
    loaded_->stored = extended;
  }
  return loaded_->stored.salt ^ loaded_->next++;
}

}  // namespace dorm::mcp
