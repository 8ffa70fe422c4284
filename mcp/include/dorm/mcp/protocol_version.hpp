// The MCP protocol revisions dorm speaks, and what each one changes on the wire.
//
// A client proposes a revision in `initialize`; the server answers with the same one if
// it supports it, otherwise with its latest (the client then decides whether to stay).
// Later requests carry the negotiated revision in the `MCP-Protocol-Version` header. dorm
// follows 2025-11-25 and accepts clients of 2025-06-18 and 2025-03-26; the differences
// that matter to the transport are batching (only 2025-03-26 allows a JSON array body)
// and the priming event (an SSE event with an id and empty data, sent first so a client
// can resume the stream; clients before 2025-11-25 may choke on its empty data).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace dorm::mcp {

// Supported revisions, latest first.
inline constexpr std::array<std::string_view, 3> kSupportedProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26"};
inline constexpr std::string_view kLatestProtocolVersion = kSupportedProtocolVersions[0];

// True if `version` is exactly one of kSupportedProtocolVersions.
bool is_supported(std::string_view version);

// The revision to answer an `initialize` that asked for `requested`: `requested` itself if
// supported, else kLatestProtocolVersion. The result always points into
// kSupportedProtocolVersions (it never refers to `requested`'s memory).
std::string_view negotiate(std::string_view requested);

// True if a session of this revision may POST a JSON array of messages (2025-03-26 only).
bool allows_batch(std::string_view version);

// True if this revision's request streams start with a priming event (2025-11-25 and
// later). An unsupported or malformed revision gets false: no priming is the safe choice
// for a client that may not understand it.
bool wants_priming(std::string_view version);

// "2025-11-25, 2025-06-18, 2025-03-26", for error messages.
std::string supported_versions_list();

}  // namespace dorm::mcp
