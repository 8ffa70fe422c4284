// A tool as its handler sees it: the call's arguments, the session's storage, progress
// and log notifications, timers, and the result.
//
// A handler runs inside its session's turn, so storage calls are synchronous and nothing
// else of that session interleaves with it. It may finish at once (ctx->finish(...)) or
// later: ctx->after(delay, fn) runs fn as a new turn of the session, with the same
// context. Until it finishes, the session keeps the call's HTTP response open; every
// notification it emits goes on that response's stream, before the result. A handler
// that throws finishes its call with an isError result naming the exception.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/content.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// A CallToolResult, as JSON text.
struct ToolResult {
  std::string json;
  // {"content":[{"type":"text","text":TEXT}],"isError":IS_ERROR}.
  static ToolResult text(std::string_view text, bool is_error = false);
  // A failed call (isError: true) with `message` as its text. Tool failures, argument
  // validation included, are results, not protocol errors (MCP 2025-11-25).
  static ToolResult error(std::string_view message) { return text(message, true); }
  // {"content":[BLOCKS…],"isError":IS_ERROR[,"structuredContent":STRUCTURED]}.
  // `structured_content_json` must be a JSON object (a tool with an outputSchema must send
  // one that fits it, see ToolRegistry::check_structured); when it is not, the result is
  // an error result saying so. With structured content and no blocks, the content is one
  // text block holding the structured JSON, as MCP asks for older clients.
  static ToolResult of(const std::vector<Content>& content, bool is_error = false,
                       std::optional<std::string> structured_content_json = {});
};

// The session's durable storage as a tool sees it: its own keys, apart from the
// session's. Valid only inside the handler's turn.
class ToolStorage {
 public:
  virtual ~ToolStorage() = default;
  virtual Result<std::optional<std::string>> get(std::string_view key) = 0;
  virtual Result<void> put(std::string_view key, std::string_view value) = 0;
  // Whether the key existed.
  virtual Result<bool> del(std::string_view key) = 0;
};

// The client's answer to a request a tool sent it (ToolContext::request).
struct ClientReply {
  enum class Kind {
    result,   // the client answered with a result: `json` is it
    error,    // the client answered with a JSON-RPC error: `json` is the error object
    timeout,  // no answer within the session's client-request timeout
  };
  Kind kind = Kind::result;
  std::string json;
  // What went wrong, for error and timeout, in words a tool may put in its result.
  std::string message;
};
using ClientReplyHandler = std::function<void(const ClientReply&)>;

class ToolContext {
 public:
  virtual ~ToolContext() = default;
  // The call's `arguments` as compact JSON (an object; "{}" when none were sent),
  // already validated against the tool's input schema.
  virtual const std::string& arguments() const = 0;
  // Valid inside the handler's turn and inside after() callbacks.
  virtual ToolStorage& storage() = 0;
  // Whether the caller asked for progress (sent a progressToken).
  virtual bool wants_progress() const = 0;
  // A notifications/progress on the call's stream; nothing without a progressToken.
  // `progress` must grow from one notification to the next.
  virtual void progress(double progress, std::optional<double> total = std::nullopt,
                        std::string_view message = {}) = 0;
  // A notifications/message at `level` (an MCP log level) with `data_json` (any JSON
  // value); dropped when below the session's level (logging/setLevel).
  virtual void log(std::string_view level, std::string_view data_json) = 0;
  // Runs `then` `delay` from now as a turn of the session (not durable: a restart ends it).
  virtual void after(std::chrono::milliseconds delay, std::function<void()> then) = 0;
  // Runs `then` as a turn of the session, as soon as it can: the way back in for work that
  // finishes on another thread (another durable object's reply to Runtime::request, a
  // library's completion callback). Callable from any thread, and after the handler
  // returned; `then` may use this context (finish the call, say). Dropped, unrun, when the
  // call is finished by then (cancelled) or the session's activation ended (a restart
  // reaps the call). Not durable, like after().
  virtual void post(std::function<void()> then) = 0;
  // Closes the call's current connection without ending its stream (SSE polling,
  // MCP 2025-11-25): the client resumes after the retry hint and gets the rest from the
  // log. Does nothing for a stream that cannot be resumed (no priming event).
  virtual void close_connection() = 0;
  // A notification unrelated to this call (a list or resource change, say): stored on the
  // session's standalone stream and delivered on its GET connection, now or when one opens.
  virtual void notify_session(std::string_view method, std::string_view params_json) = 0;
  // Sends a JSON-RPC request to the client on the call's stream (`elicitation/create`,
  // `sampling/createMessage`, `roots/list`, `ping`) under an id of the session's own,
  // and later runs `on_reply` as a turn of the session with the client's answer, or with
  // a timeout. Nothing is sent and an error is returned at once (invalid_argument, naming
  // what is missing) when the client did not declare the capability the method needs in
  // `initialize`, for any other method, or when the call is finished. A call that
  // finishes or is cancelled first never sees the reply. Not durable: after a restart the
  // waiting call is reaped like any other, and the client's late answer is dropped.
  virtual Result<void> request(std::string_view method, std::string_view params_json,
                               ClientReplyHandler on_reply) = 0;
  // As request(), naming the request `key` (1 to 64 of [A-Za-z0-9_.-], unique within the
  // call). In the 2026-07-28 revision a tool asks for input through its call's result
  // (`input_required`, its `inputRequests` keyed this way) and the client's answer comes
  // back under the same key when it sends the call again; request() there names its
  // requests input-1, input-2, … in the order made. Sessions of the 2025 revisions send
  // the request as request() does, and the key plays no part.
  virtual Result<void> ask(std::string_view key, std::string_view method, std::string_view params_json,
                           ClientReplyHandler on_reply) {
    (void)key;
    return request(method, params_json, std::move(on_reply));
  }
  // Says the resource `uri` changed: every session subscribed to it (this one included)
  // sends its client notifications/resources/updated, once this turn commits.
  virtual void resource_updated(std::string_view uri) = 0;
  // Ends the call with a protocol error instead of a result: a JSON-RPC error `code` and
  // `message` (say -32603 for a failure of the server's own machinery; a tool's own
  // failure is an isError result, finish()). A task ends `failed` with it. Where the era
  // has no way to say it (a 2025 session's tool), the call ends with an isError result
  // holding the message.
  virtual void fail(int code, std::string_view message) {
    (void)code;
    finish(ToolResult::error(message));
  }
  // Ends the call with `result`. Later calls do nothing; after a cancellation the call is
  // finished already and its pending after() callbacks do not run.
  virtual void finish(ToolResult result) = 0;
  virtual bool finished() const = 0;
};

using ToolHandler = std::function<void(std::shared_ptr<ToolContext>)>;

}  // namespace dorm::mcp
