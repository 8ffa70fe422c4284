// NodeForwarder — sends a request that reached a node which does not serve its session on
// to the node that does, and relays that node's answer (scale-out, docs/scale-out.md,
// "Forwarding").
//
// Plain HTTP/1.1 proxying, one connection per forwarded request: the method, the target
// (path and query, as the client sent them), the body and every end-to-end header
// (Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Origin, Accept,
// traceparent, ...) go out unchanged; hop-by-hop headers (RFC 9110 §7.6.1) are dropped,
// Host becomes the other node's authority (that node checks Host against its own
// addresses; this node checked the client's), and `Dorm-Forwarded-By: <this node>` is
// added, which is the loop guard: a node never forwards a request carrying it. The answer
// comes back as it is — status, end-to-end headers, and its body: read whole when it has
// a Content-Length, relayed chunk by chunk as it arrives otherwise (an SSE stream), for
// as long as both sides keep their connections. A client that goes away closes the
// connection to the other node; the other node going away aborts the client's stream,
// so the client resumes it (GET with Last-Event-ID) like after any broken connection.
//
// A node that cannot be reached — its address does not resolve, or the connection is
// refused or not made within connect_timeout — answers nothing: `unreachable` is called
// instead (the endpoint then presumes that node dead and serves the session itself once
// its lease runs out). A node reached that fails before its answer's header (the
// connection reset, no header within response_timeout) is a 502.
//
// Beast and Asio stay inside node_forwarder.cpp; its I/O runs on threads of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "dorm/mcp/http_server.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// The header that marks a forwarded request (lower-case, as HttpRequest keeps names).
inline constexpr std::string_view kForwardedByHeader = "dorm-forwarded-by";

class NodeForwarder {
 public:
  struct Options {
    // This node's id: the value of Dorm-Forwarded-By.
    std::string node_id;
    // Resolving and connecting to the other node must be done within this; otherwise
    // the node is unreachable. Short: a live node on the same network accepts at once.
    std::chrono::milliseconds connect_timeout{2'000};
    // From the request sent until the answer's header: a call answered in one JSON body
    // sends its header only when the call ends, so this bounds the longest such call.
    // The body of a streamed answer has no time limit (an SSE stream lasts).
    std::chrono::milliseconds response_timeout{300'000};
    // An answer with a Content-Length above this is a 502 (nothing of it is relayed).
    std::size_t max_body_bytes = 64u << 20;
    // A streamed answer whose client has this much unsent is cut off (the client reads
    // too slowly), as the server's own streams are.
    std::size_t max_unsent_bytes = 8u << 20;
    int io_threads = 2;
  };

  // Starts the I/O threads. Errors: invalid_argument for an empty node_id or no threads.
  static Result<std::unique_ptr<NodeForwarder>> start(Options options);
  // stop().
  ~NodeForwarder();
  NodeForwarder(const NodeForwarder&) = delete;
  NodeForwarder& operator=(const NodeForwarder&) = delete;

  // Called instead of answering when the other node cannot be reached; `why` says how.
  using Unreachable = std::function<void(std::string why)>;

  // Sends `request` to the node advertised at `address` (an http:// URL; its path is not
  // used, the request's own target is) and answers `respond` with that node's answer, or
  // calls `unreachable`. Exactly one of them is called, once, from an I/O thread of the
  // forwarder — or neither if the forwarder stops first. An address that is not an
  // http:// URL answers 502 naming it. Never blocks. Thread-safe.
  void forward(const HttpRequest& request, const std::string& address, Respond respond,
               Unreachable unreachable) const;

  // This node's id (Options::node_id).
  const std::string& node_id() const;
  // Requests forwarded so far, and those of them whose node was unreachable.
  std::uint64_t forwarded() const;
  std::uint64_t unreachable() const;

  // Closes every forwarded connection (streams relayed through them abort) and ends the
  // I/O threads; forwards not answered yet are dropped with their callbacks. Idempotent.
  void stop();

  struct Impl;  // node_forwarder.cpp

 private:
  explicit NodeForwarder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::mcp
