// SessionCall — what the HTTP endpoint asks of a session object, and how it is answered.
//
// The endpoint (endpoint.hpp) does everything that needs no session state on the HTTP
// thread: header checks, authentication, body parsing. What needs the session — does it
// exist, who owns it, which revision did it negotiate, what do its methods answer — is
// one SessionCall message to the session's durable object, which answers through the
// call's Responder: with a complete HttpResponse, or with a response head whose body
// streams (HttpResponse::stream, written by the session's sink actor). The object never
// touches a socket; the HTTP thread never waits on it.
// Because the call is a plain message, a session can be driven without HTTP (virtual
// time tests do exactly that).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/modern.hpp"

namespace dorm::mcp {

// Answers one HTTP request exactly once. The session calls respond() when it has the
// answer (after the turn that produced it committed); if the call is dropped unanswered
// (the session was reset or stopped with it), the destructor answers 503 so no client
// waits for an answer that will never come.
class Responder {
 public:
  explicit Responder(Respond respond) : respond_(std::move(respond)) {}
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  // The first call answers; later ones do nothing.
  void respond(HttpResponse response);

 private:
  Respond respond_;
  std::atomic<bool> answered_{false};
};

struct SessionCall {
  // Which HTTP request this is. `initialize` is a POST without a session id whose body is
  // one initialize request: it creates the session.
  enum class Kind { initialize, post, get, remove };
  Kind kind = Kind::post;
  std::string session_id;
  Identity caller;
  // The request's MCP-Protocol-Version header (already checked to be a supported one),
  // empty when absent.
  std::string protocol_version;
  // POST (and initialize): the parsed body.
  std::vector<Message> messages;
  bool batch = false;
  // GET: the Last-Event-ID header, if any (a resume).
  std::optional<std::string> last_event_id;
  // Where the answer goes. The session's handler replies nothing itself.
  std::shared_ptr<Responder> responder;
};

// A request of the 2026-07-28 revision that needs a turn (tools/call, prompts/get,
// resources/read), for the durable object that serves it (actors/mcp_request.hpp). Each
// such request has an object of its own, named by `handle`: a fresh one, or, for a
// request sent again with a `requestState`, the one that issued that state.
struct ModernCall {
  ModernRequest request;
  Identity caller;
  // The object's name: 32 hex digits.
  std::string handle;
  // Whether the request carried a requestState (opened: its MAC held for `caller`), and
  // the round it names, which the object checks against its record.
  bool resumed = false;
  std::uint32_t round = 0;
  std::shared_ptr<Responder> responder;
};

inline constexpr const char* kEventStream = "text/event-stream";

// Activates a session without a request: its on_start (and so its reaper) runs, and it
// answers `true`. Sent at boot to the sessions the in-flight index names.
struct SessionWake {};

// The server is draining and its window ran out: every tool call the session still runs
// stops and is answered with the -32001 error (reason `server_draining`, reaper.hpp), and
// every open SSE connection of the session ends cleanly (clients resume against the
// successor). The session answers how many calls it stopped (std::uint64_t).
struct SessionDrain {};

// Tells a session that the resource `uri` changed: if the session subscribed to it
// (resources/subscribe), it sends notifications/resources/updated on its standalone
// stream. Not client activity.
struct ResourceUpdated {
  std::string uri;
};

}  // namespace dorm::mcp

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::SessionCall)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::ModernCall)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::HttpResponse)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::SessionWake)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::SessionDrain)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::mcp::ResourceUpdated)
