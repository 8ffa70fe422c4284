// The data field of an SSE event, as it goes on the wire.
//
// SSE ends a field at a line break (LF, CR or CRLF), and a client joins the `data:` lines
// of one event with LF. A JSON-RPC message may hold raw line breaks as whitespace — a
// tool's input schema is listed as registered, and one written across several lines keeps
// its line breaks — so a message goes out as one `data:` line per line of it, which a
// client joins back into the same JSON (CR or CRLF between tokens become LF: whitespace
// either way; inside a JSON string a line break is always escaped).
#pragma once

#include <string>
#include <string_view>

namespace dorm::mcp {

// Appends `data: LINE\n` to `out` for each line of `data` (one `data: \n` when it is
// empty). The event's closing blank line is the caller's.
void append_sse_data(std::string& out, std::string_view data);

}  // namespace dorm::mcp
