// MCP session ids (the `MCP-Session-Id` header).
//
// The server names a session in its answer to `initialize`; the client sends the name on
// every later request. The spec asks for a globally unique, cryptographically secure
// value of visible ASCII (0x21–0x7E). A session id is not a credential — the bearer
// token is, and a session only answers the identity that created it — but an unguessable
// id keeps one client from even probing another's sessions. Ids arriving in headers are
// screened with plausible_session_id() before they reach a storage lookup.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::mcp {

// new_session_id() draws this many bytes from the CSPRNG: 128 bits, so ids never collide
// and cannot be guessed.
inline constexpr std::size_t kSessionIdRandomBytes = 16;
// Bounds on a session id accepted from a client. Ours are 32 characters; the bounds leave
// room for a longer format later while keeping junk (empty or huge values) out of
// storage keys and logs.
inline constexpr std::size_t kMinSessionIdLength = 16;
inline constexpr std::size_t kMaxSessionIdLength = 128;

// A fresh session id: kSessionIdRandomBytes from RAND_bytes as lower-case hex (32
// characters). Errors: internal if the CSPRNG fails (it is then unsafe to make ids).
Result<std::string> new_session_id();

// True if `id` could be a session id: kMinSessionIdLength to kMaxSessionIdLength
// characters, each visible ASCII (0x21–0x7E). Says nothing about whether the session
// exists.
bool plausible_session_id(std::string_view id);

}  // namespace dorm::mcp
