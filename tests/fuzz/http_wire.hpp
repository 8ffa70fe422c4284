// Raw HTTP/1.1 on loopback for the HTTP fuzz target (http_fuzz.cpp): send bytes exactly
// as given on a fresh connection, take what comes back within a bound, and read it back
// as HTTP responses with Beast's own parsers (the ones the server reads requests with).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dorm::fuzz {

// What one connection brought back.
struct Exchange {
  bool connected = false;  // the connection was made (127.0.0.1 only)
  // The server closed or reset the connection before the bound passed. Otherwise the
  // bound cut the reading short (a stream that stays open, say).
  bool closed = false;
  // The first kKeptBytes the server sent; `truncated` when it sent more.
  std::string received;
  bool truncated = false;
};

inline constexpr std::size_t kKeptBytes = 1 << 20;

// Connects to 127.0.0.1:`port`, sends `bytes`, then closes its sending side, so the
// server reads an end of stream right after them; reads (while sending, so neither side
// can block the other) until the server closes the connection or `bound` has passed.
Exchange exchange(std::uint16_t port, std::string_view bytes, std::chrono::milliseconds bound);

// The methods of the requests in `sent`, in order, as far as the server can read them:
// parsed with Beast's request parser under the server's header limit, stopping at the
// first request that is malformed or incomplete (its method is kept when its header was
// complete). The response to a HEAD has no body, so reading responses needs these.
std::vector<std::string> request_methods(std::string_view sent, std::size_t header_limit);

struct Response {
  int status = 0;
  std::string session_id;  // the Mcp-Session-Id header, if any
  std::string body;        // as far as it came (a stream is cut off when the client leaves)
  bool complete = false;
};

struct Reading {
  std::vector<Response> responses;
  // Empty when the bytes are a sequence of well-formed responses (status 200-599), the
  // last one possibly cut short inside its body, or inside its header when the bound or
  // the byte cap ended the reading; otherwise what is wrong.
  std::string problem;
};

// Reads `got.received` as the responses to requests with `methods`, in order.
Reading read_responses(const Exchange& got, const std::vector<std::string>& methods);

// The value of the first SSE `id:` field in `body`, or empty.
std::string first_event_id(std::string_view body);

}  // namespace dorm::fuzz
