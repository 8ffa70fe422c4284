// SseSink — one open SSE connection, as an actor inside the runtime.
//
// A session object never touches a socket: for each connection that carries one of its
// streams it spawns a sink holding the connection's StreamBody, sends it the bytes of
// each event after the turn that stored the event commits, and adopts it (the session
// learns when the sink ends). A sink ends when:
//   - it is told the stream is complete (SinkWrite::end): the response ends cleanly;
//   - it is told to close (SinkClose): a server-initiated close or a newer connection on
//     the same stream; the response ends cleanly and the client may resume from the log;
//   - the client goes away or the connection fails;
//   - its client falls more than `max_unsent` bytes behind (beyond the replay it started
//     with): the connection is closed at
//     once (buffering without bound for a reader that does not read would let one client
//     exhaust the server's memory); the client resumes from the log, which holds every
//     event;
//   - its session's activation ends (adopted actors are told to exit): the connection is
//     closed and the client resumes against the next activation.
// While open it writes an SSE comment every `keep_alive` so that proxies and clients do
// not time out a quiet stream.
//
// Nothing the session cares about is lost when a sink ends early: every event was stored
// before it was sent.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "dorm/mcp/http_server.hpp"

namespace dorm::mcp {

struct SinkOptions {
  // More unsent than this and the connection is closed (docs/architecture.md#live-connections).
  std::size_t max_unsent = 1024 * 1024;
  // An SSE comment this often while the stream is open (the official SDK uses 15 s).
  std::chrono::milliseconds keep_alive{15'000};
};

// Bytes for the connection, already framed as SSE. `end`: after them the stream is
// complete and the response ends.
struct SinkWrite {
  std::string bytes;
  bool end = false;
  // A resume's replay: its size is added to what the client may have unsent, so a large
  // replay (at most the event log's 4 MiB) is not mistaken for a slow reader.
  bool replay = false;
};

// Ends the response cleanly now (the stream itself goes on in the log).
struct SinkClose {};

// The keep-alive comment.
inline constexpr const char* kKeepAliveComment = ": keepalive\n\n";

// Spawns a sink for `body` (whose response head the caller sends). `replayed`: bytes the
// caller wrote into `body` before sending the head (a priming event, a resume's replay),
// which leave in one write with the head; like a SinkWrite::replay they are not counted
// against max_unsent.
caf::actor spawn_sse_sink(caf::actor_system& system, std::shared_ptr<StreamBody> body,
                          SinkOptions options = {}, std::size_t replayed = 0);

}  // namespace dorm::mcp

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::SinkWrite)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::SinkClose)
