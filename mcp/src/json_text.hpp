// JSON text in and out, shared by the parsers of this layer (private to mcp/src).
//
// Every JSON text dorm reads from outside — a request body, a token file — goes through
// parse_json, which makes RapidJSON's defaults safe for untrusted input: strings must be
// valid UTF-8 (JSON-RPC messages MUST be UTF-8), the parser is iterative so a deeply
// nested text cannot overflow the stack, nesting is bounded so that later recursive walks
// (RapidJSON's own Writer is one) are bounded too, and the whole input must be one JSON
// value (a NUL byte does not end it early).
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dorm::mcp::detail {

// Arrays and objects nested deeper than this are refused. Tool arguments and results are
// shallow in practice; 128 is what serde_json allows by default and keeps every recursive
// walk over a parsed value to a small, fixed stack depth.
inline constexpr std::size_t kMaxJsonDepth = 128;

// Parses `text` into `doc` (replacing its content). Numbers are parsed in full precision.
// Returns nullopt on success, else a message for a person that names the byte offset and
// what was wrong (e.g. "invalid UTF-8 in a string at offset 12"); `doc` is then
// unspecified.
std::optional<std::string> parse_json(std::string_view text, rapidjson::Document& doc);

// The compact JSON text of `value` (no whitespace between tokens).
std::string compact(const rapidjson::Value& value);

// True if `text` is exactly one JSON value that parse_json accepts.
bool is_json(std::string_view text);

}  // namespace dorm::mcp::detail
