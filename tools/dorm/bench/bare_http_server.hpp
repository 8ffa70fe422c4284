// `dorm bench http`: the bare HTTP ceiling `dorm bench mcp` compares dorm serve with. A
// minimal Boost.Beast server with dorm serve's default number of I/O threads that answers
// the MCP exchanges of the benchmark's client from memory — no runtime, no storage, no
// session — framed byte for byte as dorm serve frames them:
//  - `initialize`: 200, an SSE stream of the result, and an `Mcp-Session-Id`;
//  - notifications: 202 and no body;
//  - `tools/call echo {text}`: 200, an SSE stream of a priming event (id, `retry: 500`,
//    empty data) and the result event, with dorm's headers (`Server`, `Content-Type`,
//    `Cache-Control`) and a Content-Length.
// The request body is parsed with dorm's own JSON-RPC parser, so the reply carries the
// request's id and echoes its text as dorm's would. Anything else gets a 400.
//
// It prints dorm serve's ready line (`listening on http://HOST:PORT/mcp`) and serves until
// SIGTERM or SIGINT. Boost.Beast is compiled in bare_http_server.cpp alone.
#pragma once

#include <string>

namespace dorm::bench {

struct BareHttpOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT, a loopback host
  int http_threads = 2;                // set from dorm serve's default by the command line
};

// Runs the server until a stop signal; 0 then, 1 (logged) when it cannot start.
int run_bare_http_server(const BareHttpOptions& options);

}  // namespace dorm::bench
