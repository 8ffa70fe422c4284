#include "dorm/mcp/media_type.hpp"

#include <doctest/doctest.h>

using dorm::mcp::accept_allows;
using dorm::mcp::is_json_content_type;

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kSse = "text/event-stream";

bool both(std::string_view accept) {
  return accept_allows(accept, kJson) && accept_allows(accept, kSse);
}

}  // namespace

TEST_CASE("accept: the usual client headers") {
  CHECK(both("application/json, text/event-stream"));
  CHECK(both("text/event-stream, application/json"));
  CHECK(both("application/json,text/event-stream"));
  CHECK(both("*/*"));
  CHECK(both("application/*, text/*"));
  CHECK(both("application/json, text/*"));
  CHECK(both("APPLICATION/JSON, Text/Event-Stream"));
  CHECK(both("application/json;q=0.9, text/event-stream;q=0.1"));
  CHECK(both("application/json; charset=utf-8, text/event-stream"));
  CHECK(both("text/html, application/json , text/event-stream ; q=1.0 , */*;q=0.8"));
  CHECK(both(" \tapplication/json\t,\ttext/event-stream\t"));
  CHECK(both(",, application/json ,, text/event-stream ,"));  // empty list elements

  CHECK(accept_allows("text/event-stream", kSse));
  CHECK_FALSE(accept_allows("text/event-stream", kJson));
  CHECK_FALSE(accept_allows("application/json", kSse));
  CHECK_FALSE(both("application/json"));
  CHECK_FALSE(both("text/event-stream"));
  CHECK_FALSE(both("text/html"));
  CHECK_FALSE(both(""));
  CHECK_FALSE(both("application/jsonx, text/event-streams"));
  CHECK_FALSE(both("application/json-seq, text/*"));
  CHECK_FALSE(both("text/*"));  // json is not text/*
}

TEST_CASE("accept: q=0 excludes, and the most specific range decides") {
  CHECK_FALSE(accept_allows("text/event-stream;q=0", kSse));
  CHECK_FALSE(accept_allows("text/event-stream;q=0.000", kSse));
  CHECK(accept_allows("text/event-stream;q=0.001", kSse));
  CHECK_FALSE(accept_allows("*/*, text/event-stream;q=0", kSse));
  CHECK(accept_allows("*/*, text/event-stream;q=0", kJson));
  CHECK_FALSE(accept_allows("text/*;q=0, */*", kSse));
  CHECK(accept_allows("text/*;q=0, text/event-stream", kSse));
  CHECK_FALSE(accept_allows("*/*;q=0", kSse));
  CHECK(accept_allows("*/*;q=0, text/*", kSse));
  CHECK(accept_allows("application/json;q=0, application/json", kJson));  // ties: any q > 0
  CHECK(accept_allows("application/json;Q=0.5", kJson));                  // names in any case
  CHECK(accept_allows("application/json;q=1", kJson));
  CHECK(accept_allows("application/json;q=1.000", kJson));
}

TEST_CASE("accept: malformed elements are skipped, not trusted") {
  // A bad q makes the element malformed; a later good element still counts.
  CHECK_FALSE(accept_allows("application/json;q=2", kJson));
  CHECK_FALSE(accept_allows("application/json;q=1.5", kJson));
  CHECK_FALSE(accept_allows("application/json;q=0.1234", kJson));
  CHECK_FALSE(accept_allows("application/json;q=", kJson));
  CHECK_FALSE(accept_allows("application/json;q=.5", kJson));
  CHECK_FALSE(accept_allows("application/json;q=-1", kJson));
  CHECK(accept_allows("application/json;q=2, application/json", kJson));
  CHECK_FALSE(accept_allows("application", kJson));
  CHECK_FALSE(accept_allows("application/", kJson));
  CHECK_FALSE(accept_allows("/json", kJson));
  CHECK_FALSE(accept_allows("*/json", kJson));
  CHECK_FALSE(accept_allows("application/json junk", kJson));
  CHECK_FALSE(accept_allows("application/json;foo", kJson));
  CHECK(accept_allows("application/json;foo, text/event-stream", kSse));
  // Quoted parameter values, with commas and escapes inside them.
  CHECK(both(R"(application/json;x="a,b", text/event-stream)"));
  CHECK(both(R"(application/json;x="a\"b,c", text/event-stream)"));
  CHECK_FALSE(accept_allows(R"(application/json;x="unterminated, text/event-stream)", kSse));
  // The quoted "q" is a weight like an unquoted one.
  CHECK_FALSE(accept_allows(R"(application/json;q="0")", kJson));
  // Empty parameters are allowed.
  CHECK(accept_allows("application/json;;q=1;", kJson));
}

TEST_CASE("content type: application/json, parameters allowed, charset must be UTF-8") {
  CHECK(is_json_content_type("application/json"));
  CHECK(is_json_content_type("Application/JSON"));
  CHECK(is_json_content_type("application/json; charset=utf-8"));
  CHECK(is_json_content_type("application/json;charset=UTF-8"));
  CHECK(is_json_content_type(R"(application/json; charset="utf-8")"));
  CHECK(is_json_content_type("application/json ; foo=bar"));
  CHECK(is_json_content_type(" application/json "));
  CHECK(is_json_content_type("application/json;"));
  CHECK(is_json_content_type("application/json;q=x"));  // q is no weight here

  CHECK_FALSE(is_json_content_type(""));
  CHECK_FALSE(is_json_content_type("text/plain"));
  CHECK_FALSE(is_json_content_type("application/json-patch+json"));
  CHECK_FALSE(is_json_content_type("application/jsonl"));
  CHECK_FALSE(is_json_content_type("application/*"));
  CHECK_FALSE(is_json_content_type("*/*"));
  CHECK_FALSE(is_json_content_type("application/json; charset=latin1"));
  CHECK_FALSE(is_json_content_type("application/json; charset=utf-16"));
  CHECK_FALSE(is_json_content_type("application/json, text/plain"));
  CHECK_FALSE(is_json_content_type("application/json junk"));
  CHECK_FALSE(is_json_content_type("application/json; charset"));
  CHECK_FALSE(is_json_content_type("application /json"));
}
