// JSON text as JavaScript's JSON.stringify writes it, byte for byte: numbers in
// Number::toString's shortest round-trip form ("1e+21", no ".0"), control characters
// escaped with lower-case hex. The execution outcome formatter needs it because the
// original system's results were built with JSON.stringify, and clients compare text.
// Internal to mcp/.
#pragma once

#include <rapidjson/document.h>

#include <string>

namespace dorm::mcp::detail {

// JSON.stringify(value, null, 2).
std::string js_pretty(const rapidjson::Value& value);
// JSON.stringify(value).
std::string js_compact(const rapidjson::Value& value);

}  // namespace dorm::mcp::detail
