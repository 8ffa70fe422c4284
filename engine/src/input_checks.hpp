// Checks on text that arrives from an engine worker, which the host treats as hostile:
// observers and the journal get only valid UTF-8 and valid JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dorm::engine {

// Deepest nesting of arrays and objects accepted from a worker. Real data is far shallower;
// the bound keeps every recursive walk over a value in the server (copying it, writing it,
// validating it against a schema) to a small stack, whatever a hostile worker sends.
inline constexpr std::size_t kMaxJsonDepth = 1000;

bool valid_utf8(std::string_view text);
// One complete JSON value, UTF-8 validated, nested at most kMaxJsonDepth deep (RapidJSON's
// iterative reader, so checking cannot overflow the stack either).
bool valid_json(std::string_view text);
// `text` as a JSON string literal.
std::string json_string(std::string_view text);

}  // namespace dorm::engine
