// Checks on text that arrives from an engine worker, which the host treats as hostile:
// observers and the journal get only valid UTF-8 and valid JSON.
#pragma once

#include <string>
#include <string_view>

namespace dorm::engine {

bool valid_utf8(std::string_view text);
// One complete JSON value, UTF-8 validated (RapidJSON).
bool valid_json(std::string_view text);
// `text` as a JSON string literal.
std::string json_string(std::string_view text);

}  // namespace dorm::engine
