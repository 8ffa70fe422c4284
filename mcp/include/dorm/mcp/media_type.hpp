// Media types in the `Accept` and `Content-Type` headers of `/mcp` requests.
//
// A POST must accept both `application/json` and `text/event-stream` (the server picks
// one per response) and carry a JSON body; a GET must accept `text/event-stream`. These
// functions read the headers as RFC 9110 §8.3 and §12.5.1 define them, so the checks
// hold for any well-formed header, not just the spelling one client uses: an Accept value
// is a comma-separated list of media ranges (`type/subtype`, `type/*`, `*/*`), each with
// optional `;name=value` parameters (values may be quoted strings, which may contain
// commas); names and types compare case-insensitively; a range's `q` weight of 0 means
// "not acceptable", and when several ranges match, the most specific one decides.
#pragma once

#include <string_view>

namespace dorm::mcp {

// True if the Accept header value `accept` allows a response of `media_type`, given as
// lower-case "type/subtype" without parameters (e.g. "text/event-stream"). The most
// specific matching ranges (type/subtype over type/* over */*) decide: acceptable if one
// of them has q > 0. Parameters other than q are ignored for matching (a client that
// writes "application/json; charset=utf-8" still accepts our JSON). Malformed elements of
// the list are skipped; an empty value accepts nothing.
bool accept_allows(std::string_view accept, std::string_view media_type);

// True if the Content-Type header value is `application/json` (any case), with any
// parameters, as long as a `charset` parameter, if present, is UTF-8 (JSON-RPC messages
// must be UTF-8). False for anything malformed, another type, or a list of types.
bool is_json_content_type(std::string_view content_type);

}  // namespace dorm::mcp
