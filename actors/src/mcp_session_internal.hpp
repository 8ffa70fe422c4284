// What the MCP session's translation units share (mcp_session.cpp: requests, tools,
// the journal; mcp_session_streams.cpp: live connections, the standalone stream, resume,
// the idle policy): the wire format of SSE events, small helpers, and the per-POST and
// per-connection state. Internal to actors/src.
#pragma once

#include <caf/actor.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>


#include <array>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mcp_session.hpp"
#include "tool_step.hpp"
#include "dorm/mcp/event_id.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/notification_budget.hpp"
#include "dorm/mcp/notifications.hpp"
#include "dorm/mcp/request_checks.hpp"
#include "dorm/mcp/session_keys.hpp"
#include "dorm/mcp/sse_data.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

// The session's key layout (dorm/mcp/session_keys.hpp).
namespace session_keys = mcp::session_keys;

namespace session_internal {


using mcp::HttpResponse;
using mcp::Message;
using mcp::SessionCall;
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// The member `key` of `obj`, or null. (No iterator comparisons here: clang in C++20 mode
// warns that RapidJSON 1.1's member iterators compare ambiguously.)
inline const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  return obj.IsObject() && obj.HasMember(key) ? &obj[key] : nullptr;
}

// A JSON string's bytes, all of them: a string from a client may hold NUL ("\u0000"), and
// GetString() read as a C string stops there, so "kv_put\u0000x" would name kv_put.
// Precondition: value.IsString().
inline std::string_view string_of(const rapidjson::Value& value) {
  return {value.GetString(), value.GetStringLength()};
}

inline std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  value.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// A response whose body is an SSE stream of JSON-RPC messages, one `message` event each.
inline HttpResponse event_stream(const std::vector<std::string>& messages) {
  HttpResponse res;
  res.headers = {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}};
  for (const auto& m : messages) {
    res.body += "event: message\n";
    mcp::append_sse_data(res.body, m);
    res.body += '\n';
  }
  return res;
}

inline HttpResponse rejected(const mcp::Rejection& r) { return HttpResponse{r.http_status, r.headers, r.body}; }

inline HttpResponse bad_request(const std::optional<mcp::RequestId>& id, int code, std::string_view message) {
  return HttpResponse{400, {{"Content-Type", "application/json"}},
                      mcp::error_response(id, code, message)};
}

// One SSE event as it goes on the wire: its id, then the message.
inline std::string sse_event(const mcp::EventId& id, std::string_view data) {
  std::string out = "id: " + id.to_string() + "\nevent: message\n";
  mcp::append_sse_data(out, data);
  out += '\n';
  return out;
}

// The priming event: an id the client can resume from, the retry hint, empty data.
inline std::string sse_priming(const mcp::EventId& id, std::int64_t retry_ms) {
  return "id: " + id.to_string() + "\nretry: " + std::to_string(retry_ms) + "\ndata: \n\n";
}

inline HttpResponse sse_response(std::string body) {
  return HttpResponse{200, {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}},
                      std::move(body)};
}

// The same 400 for every Last-Event-ID that names no stream of the caller's session.
inline HttpResponse bad_cursor() {
  return HttpResponse{400, {{"Content-Type", "application/json"}},
                      mcp::error_response(std::nullopt, mcp::kTransportError,
                                          "Last-Event-ID names no stream of this session")};
}

// Runtime index of sessions with requests in flight: <session object id>/<request key>.
using mcp::kInflightIndex;

// MCP log levels (RFC 5424 severities), least severe first.
constexpr std::array<std::string_view, 8> kLogLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

inline int log_rank(std::string_view level) {
  for (std::size_t i = 0; i < kLogLevels.size(); ++i) {
    if (kLogLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

// Parses a request's params (absent: an empty object). Null if not an object.
inline bool parse_params(const Message& request, rapidjson::Document& doc) {
  doc.Parse(request.params.empty() ? "{}" : request.params.c_str());
  return !doc.HasParseError() && doc.IsObject();
}


}  // namespace session_internal

// ---- exchanges and tool contexts ----

struct McpSession::Exchange {
  // Where the exchange is; each state names the states that may follow it.
  enum class Phase {
    reading,    // the POST's own turn reads its messages; events go into `body`
                // → sealed, or done (nothing needed an answer: 202)
    sealed,     // every message has been seen, still in the POST's turn
                // → done (all answered in the turn: one plain response), or streaming
    streaming,  // the response went to a connection, or was ended early; events go to
                // the stream's connection → done
    done,       // the stream is complete (final)
  };

  // Moves to `next`; a transition the list above does not allow is a defect in the
  // session and throws std::logic_error (failing the turn, committing nothing).
  void advance(Phase next);
  // Whether the POST's own turn is still running, so events open its response body.
  bool in_turn() const { return phase == Phase::reading || phase == Phase::sealed; }

  Phase phase = Phase::reading;
  // The POST's HTTP request, until its response starts.
  std::shared_ptr<mcp::Responder> responder;
  std::uint64_t stream = 0;
  // The events written while the POST's own turn runs (each stored in the event log
  // first): they open the response. Later events go to the stream's connection.
  std::string body;
  int outstanding = 0;  // tool calls not finished
  // A tool asked, during the POST's turn, to end the response early (SSE polling): the
  // move to streaming answers with the body so far instead of opening a connection.
  bool close_requested = false;
  Lease lease;  // a session with work in flight is never evicted
};

// One open SSE connection of this session: its sink actor and the lease that keeps the
// session in memory while it is open.
struct McpSession::Connection {
  caf::actor sink;  // set by the effect that spawns it, before any write to it
  Lease lease;
};

// The session's storage as tools see it: keys under t/.
class McpSession::Storage : public mcp::ToolStorage {
 public:
  explicit Storage(McpSession& session) : session_(session) {}
  Result<std::optional<std::string>> get(std::string_view key) override {
    return session_.get(prefixed(key));
  }
  Result<void> put(std::string_view key, std::string_view value) override {
    return session_.put(prefixed(key), value);
  }
  Result<bool> del(std::string_view key) override { return session_.del(prefixed(key)); }

 private:
  static std::string prefixed(std::string_view key) { return session_keys::tool_data(key); }
  McpSession& session_;
};

// One tools/call of a client, as its tool sees it (ToolContext), with the session
// behind it. Defined here so code mode (mcp_session_code.cpp) can drive one too.
class McpSession::CallContext : public mcp::ToolContext,
                                public std::enable_shared_from_this<CallContext> {
 public:
  CallContext(McpSession& session, const mcp::ToolRegistry::Entry& tool,
              std::shared_ptr<Exchange> exchange, mcp::RequestId id, std::string arguments,
              std::string progress_token)
      : session_(session),
        inbox_(session.inbox()),
        tool_(tool),
        exchange_(std::move(exchange)),
        id_(std::move(id)),
        arguments_(std::move(arguments)),
        progress_token_(std::move(progress_token)) {}

  const std::string& arguments() const override { return arguments_; }
  mcp::ToolStorage& storage() override { return *session_.tool_storage_; }
  bool wants_progress() const override { return !progress_token_.empty(); }

  void progress(double progress, std::optional<double> total, std::string_view message) override {
    if (finished_ || progress_token_.empty() || !within_budget()) return;
    session_.emit(*exchange_, mcp::progress_notification(progress_token_, progress, total, message));
  }

  void log(std::string_view level, std::string_view data_json) override {
    if (finished_ || !session_.meta_) return;
    int rank = session_internal::log_rank(level);
    if (rank < 0 || rank < session_internal::log_rank(session_.meta_->log_level)) return;
    if (!within_budget()) return;
    session_.emit(*exchange_, mcp::log_notification(level, data_json));
  }

  void after(std::chrono::milliseconds delay, std::function<void()> then) override {
    session_.after(delay, [self = shared_from_this(), then = std::move(then)] {
      // A cancelled call does no more work.
      if (!self->finished_) self->run(then);
    });
  }

  void post(std::function<void()> then) override {
    inbox_.post([self = shared_from_this(), then = std::move(then)] {
      if (!self->finished_) self->run(then);
    });
  }

  Result<void> request(std::string_view method, std::string_view params_json,
                            mcp::ClientReplyHandler on_reply) override {
    if (finished_) {
      return Error{ErrorCode::invalid_argument, "the call is finished: it cannot ask the client"};
    }
    auto deliver = [self = shared_from_this(), on_reply = std::move(on_reply)](
                       const mcp::ClientReply& reply) {
      if (!self->finished_) self->run([&] { on_reply(reply); });
    };
    return session_.send_client_request(*exchange_, id_.to_key(), method, params_json,
                                        std::move(deliver));
  }

  void finish(mcp::ToolResult result) override {
    if (finished_) return;
    finished_ = true;
    session_.calls_.erase(id_.to_key());
    session_.drop_client_requests(id_.to_key());
    if (auto fits = session_.options_.tools->check_structured(tool_, result); !fits) {
      // The tool broke its own output schema: a server bug, which the client learns of as
      // a failed call rather than as data that does not fit what was promised.
      log::error("tool_output_schema_mismatch",
                 {{"session", session_.session_id_}, {"error", fits.error().message}});
      result = mcp::ToolResult::error(fits.error().message);
    }
    session_.emit(*exchange_, mcp::result_response(id_, result.json), id_);
    if (journaled_) session_.journal_del(id_);
    --exchange_->outstanding;
    session_.complete(exchange_);
  }

  // The call's journal record was written (McpSession::call_tool): its final response
  // or its end removes it.
  void mark_journaled() { journaled_ = true; }

  void close_connection() override {
    if (!finished_) session_.close_connection(*exchange_);
  }

  void notify_session(std::string_view method, std::string_view params_json) override {
    if (finished_) return;
    session_.emit_standalone(mcp::notification(method, params_json));
    auto list = mcp::ListenHub::list_of(method);
    if (auto* hub = session_.options_.listen; hub && list) {
      session_.after_commit([hub, list] { hub->list_changed(*list); });
    }
  }

  void resource_updated(std::string_view uri) override {
    if (finished_) return;
    session_.tell_subscribers(uri);
    if (auto* hub = session_.options_.listen) {
      session_.after_commit([hub, uri = std::string(uri)] { hub->resource_updated(uri); });
    }
  }

  // notifications/cancelled: the work stops and no response is sent. The journal record
  // goes now, in the batch that (for a one-request stream) also ends the stream.
  void cancel() { stop(std::nullopt); }

  // The server is draining and the call ran out of time: the work stops and the call is
  // answered with `error_response` (the reaper's error, reason server_draining), stored
  // in the batch that deletes its journal record, as a reaped call's would be.
  void interrupt(std::string error_response) { stop(std::move(error_response)); }

  bool finished() const override { return finished_; }
  const mcp::RequestId& request_id() const { return id_; }
  // The session's code mode, if on.
  Code* code() const { return session_.code_.get(); }

  // Runs a piece of the handler; an exception finishes the call with an error result,
  // except a failure of the store (thrown by value_or_throw, the tool's or the session's
  // own on the tool's behalf), which fails the turn: the session resets and its next
  // activation's reaper answers the call, where an error result here could not even be
  // stored.
  void run(const std::function<void()>& step) {
    run_tool_step(step, [this](mcp::ToolResult r) { finish(std::move(r)); });
  }

  // Runs when the client cancels the call (code mode stops the execution behind it).
  std::function<void()> on_cancel;

 private:
  McpSession& session_;
  // Taken in the turn that made the call: post() comes from other threads, where the
  // session itself must not be touched (its activation may be gone).
  Inbox inbox_;
  const mcp::ToolRegistry::Entry& tool_;

  // The call's notifications pass its budget (notification_budget.hpp); the first one
  // dropped is logged, once per call.
  bool within_budget() {
    if (budget_.take(session_.clock().now_ms())) return true;
    if (budget_.dropped() == 1) {
      log::warn("call_notifications_dropped", {{"session", session_.session_id_},
                                              {"request", id_.to_json()},
                                              {"reason", "over the call's notification rate"}});
    }
    return false;
  }

  void stop(std::optional<std::string> final_response) {
    if (finished_) return;
    finished_ = true;
    if (on_cancel) on_cancel();
    session_.calls_.erase(id_.to_key());
    session_.drop_client_requests(id_.to_key());
    if (final_response) session_.emit(*exchange_, std::move(*final_response), id_);
    if (journaled_) session_.journal_del(id_);
    --exchange_->outstanding;
    session_.complete(exchange_);
  }

  std::shared_ptr<Exchange> exchange_;
  mcp::RequestId id_;
  std::string arguments_;
  std::string progress_token_;  // JSON text of the token; empty: none
  mcp::NotificationBudget budget_;
  bool finished_ = false;
  bool journaled_ = false;
};

}  // namespace dorm::actors
