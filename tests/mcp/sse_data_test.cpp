// append_sse_data: a message with raw line breaks goes out as several data lines, which
// an SSE client joins back with LF.
#include "dorm/mcp/sse_data.hpp"

#include <doctest/doctest.h>

#include <string>

using dorm::mcp::append_sse_data;

namespace {

std::string framed(std::string_view data) {
  std::string out = "prefix\n";
  append_sse_data(out, data);
  return out;
}

// What an SSE client makes of the data lines (the joining rule of the SSE standard).
std::string joined(const std::string& lines) {
  std::string out;
  bool first = true;
  std::size_t at = 0;
  while ((at = lines.find("data: ", at)) != std::string::npos) {
    auto end = lines.find('\n', at);
    if (!first) out += '\n';
    out += lines.substr(at + 6, end - at - 6);
    first = false;
    at = end;
  }
  return out;
}

}  // namespace

TEST_CASE("sse data: one line stays one data line, empty data is one empty data line") {
  CHECK(framed(R"({"jsonrpc":"2.0","id":1,"result":{}})") ==
        "prefix\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
  CHECK(framed("") == "prefix\ndata: \n");
}

TEST_CASE("sse data: LF, CR and CRLF each start a new data line; nothing else is touched") {
  CHECK(framed("{\"a\":\n  1}") == "prefix\ndata: {\"a\":\ndata:   1}\n");
  CHECK(framed("{\"a\":\r\n1,\r\"b\":2}") == "prefix\ndata: {\"a\":\ndata: 1,\ndata: \"b\":2}\n");
  CHECK(framed("x\n") == "prefix\ndata: x\ndata: \n");
  CHECK(framed("\n\n") == "prefix\ndata: \ndata: \ndata: \n");
  CHECK(framed("a\r") == "prefix\ndata: a\ndata: \n");
  // A client gets the message back, line breaks as LF.
  std::string schema = "{\"type\":\"object\",\n  \"properties\":{\r\n  \"a\":{}}}";
  std::string out;
  append_sse_data(out, schema);
  CHECK(joined(out) == "{\"type\":\"object\",\n  \"properties\":{\n  \"a\":{}}}");
}
