// McpSession's live side: open connections (sink actors), the standalone GET stream,
// resume by Last-Event-ID, and the idle policy's alarm. See mcp_session.hpp.

#include "dorm/mcp/protocol_version.hpp"
#include "dorm/mcp/reaper.hpp"
#include "dorm/mcp/sse_sink.hpp"
#include "dorm/runtime/log.hpp"
#include "mcp_session_code.hpp"
#include "mcp_session_internal.hpp"

namespace dorm::actors {

using namespace session_internal;

void McpSession::deliver(std::uint64_t stream, std::string bytes, bool end) {
  auto it = connections_.find(stream);
  if (it == connections_.end()) return;  // no client attached: the log has it
  auto connection = it->second;
  if (end) connections_.erase(it);
  after_commit([this, connection, bytes = std::move(bytes), end]() mutable {
    tell_helper(connection->sink, caf::make_message(mcp::SinkWrite{std::move(bytes), end, false}));
  });
}

void McpSession::open_connection(std::uint64_t stream, std::shared_ptr<mcp::Responder> responder,
                                 std::string first_bytes) {
  // A newer connection on a stream replaces the older one (which may be half-open).
  if (auto old = connections_.find(stream); old != connections_.end()) {
    after_commit([this, old_connection = old->second] {
      tell_helper(old_connection->sink, caf::make_message(mcp::SinkClose{}));
    });
  }
  auto connection = std::make_shared<Connection>();
  connection->lease = keep_alive();
  connections_[stream] = connection;
  auto body = std::make_shared<mcp::StreamBody>();
  // Spawned only once the turn committed, so a failed turn leaves no connection behind.
  after_commit([this, stream, connection, responder = std::move(responder), body,
                first_bytes = std::move(first_bytes)]() mutable {
    // The first bytes (the priming event, or a resume's replay) are in the body before
    // the head is sent, so both leave in one write (http_server.cpp, start_stream).
    body->write(first_bytes);
    connection->sink = mcp::spawn_sse_sink(system(), body, options_.sink, first_bytes.size());
    adopt(connection->sink, [this, stream, connection] {
      auto it = connections_.find(stream);
      if (it != connections_.end() && it->second == connection) connections_.erase(it);
    });
    HttpResponse head(200, {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}});
    head.stream = body;
    responder->respond(std::move(head));
  });
}

void McpSession::close_connection(Exchange& exchange) {
  // Only a stream the client can resume may be closed before it is complete.
  if (!mcp::wants_priming(meta_->protocol_version) || !options_.priming) return;
  if (exchange.in_turn()) {
    exchange.close_requested = true;
    return;
  }
  auto it = connections_.find(exchange.stream);
  if (it == connections_.end()) return;
  after_commit([this, connection = it->second] {
    tell_helper(connection->sink, caf::make_message(mcp::SinkClose{}));
  });
  connections_.erase(it);
}

std::uint64_t McpSession::standalone_stream() {
  if (standalone_) return standalone_->stream;
  if (auto stored = get(session_keys::kStandaloneCursor).value_or_throw()) {
    auto cursor = mcp::parse_event_id(*stored);
    if (!cursor) throw std::runtime_error("corrupt standalone stream cursor '" + *stored + "'");
    standalone_ = *cursor;
    return cursor->stream;
  }
  // Created on first use. Its seq 0 is an empty placeholder, so "nothing delivered yet"
  // is a cursor like any other.
  std::uint64_t id = stream_ids_.next().value_or_throw();
  log_.open(id, "", options_.retry_ms > 0 ? options_.retry_ms : 1).value_or_throw();
  standalone_ = mcp::EventId{id, 0};
  store_standalone_cursor();
  return standalone_->stream;
}

void McpSession::store_standalone_cursor() {
  put(session_keys::kStandaloneCursor, standalone_->to_string()).value_or_throw();
}

void McpSession::emit_standalone(std::string message) {
  std::uint64_t stream = standalone_stream();
  auto id = log_.append(stream, message).value_or_throw();
  if (connections_.count(stream)) {
    // Handed to the open GET: a later fresh GET starts after it.
    standalone_ = id;
    store_standalone_cursor();
    deliver(stream, sse_event(id, message), false);
  }
}

void McpSession::open_standalone(const SessionCall& call) {
  std::uint64_t stream = standalone_stream();
  // What no GET has carried yet, then live. Never a response: only notifications and
  // server requests are stored on this stream.
  auto replay = log_.replay_after(*standalone_);
  if (!replay && replay.error().code == ErrorCode::not_found) {
    // The cursor's events were dropped (the log keeps at most its limits): from the oldest.
    replay = log_.replay_after(mcp::EventId{stream, 0});
  }
  if (!replay) throw ErrorException(std::move(replay).error());
  std::string bytes;
  mcp::EventId last = *standalone_;
  for (const auto& e : replay->events) {
    bytes += sse_event(e.id, e.data);
    last = e.id;
  }
  if (mcp::wants_priming(meta_->protocol_version) && options_.priming) {
    // A resumable start: the client may come back with this id (or a later one).
    bytes = sse_priming(*standalone_, options_.retry_ms) + bytes;
  }
  if (!(last == *standalone_)) {
    standalone_ = last;
    store_standalone_cursor();
  }
  open_connection(stream, call.responder, std::move(bytes));
}

void McpSession::resume(const SessionCall& call) {
  auto cursor = mcp::parse_event_id(*call.last_event_id);
  if (!cursor) return answer_now(call, bad_cursor());
  auto replay = log_.replay_after(*cursor);
  if (!replay && replay.error().code == ErrorCode::not_found) return answer_now(call, bad_cursor());
  if (!replay) throw ErrorException(std::move(replay).error());
  if (replay->truncated) {
    log::warn("cursor_truncated", {{"session", session_id_}, {"cursor", *call.last_event_id}});
  }
  std::string bytes;
  for (const auto& e : replay->events) bytes += sse_event(e.id, e.data);
  if (replay->finished) {
    // Complete: what follows the cursor, or 204 so the client stops reconnecting.
    if (bytes.empty()) return answer_now(call, HttpResponse{204});
    return answer_now(call, sse_response(std::move(bytes)));
  }
  // Still open: replay, then this connection carries the stream live (and replaces the
  // one that carried it before).
  if (standalone_ && cursor->stream == standalone_->stream && !replay->events.empty()) {
    standalone_ = replay->events.back().id;
    store_standalone_cursor();
  }
  if (bytes.empty() && mcp::wants_priming(meta_->protocol_version) && options_.priming) {
    // Nothing to replay: without this the connection carries no id until the stream's
    // next event, and a client whose resumed connection breaks before then has nothing
    // to resume from (the SDK keeps the last id per connection, reconnects without
    // Last-Event-ID onto the standalone stream, and the call hangs: found by dorm
    // torture). The cursor, sent again as a priming event, is that id.
    bytes = sse_priming(*cursor, options_.retry_ms);
  }
  open_connection(cursor->stream, call.responder, std::move(bytes));
}

// Stores the last activity with the request's own batch. The idle alarm is left alone when
// one is already due no later than the new idle deadline: when it fires, the policy's first
// row re-arms it for the remainder. Rewriting it on every request moved an alarm index
// entry per call (a delete and a put), which is what made the alarm index a hot spot
// under load. It is pulled earlier only when it is missing or later, as after a dispose
// (the TTL alarm) or a restart.
void McpSession::note_activity() {
  auto now = clock().now_ms();
  put(session_keys::kLastActivity, std::to_string(now)).value_or_throw();
  const std::int64_t deadline = now + options_.idle.idle_after.count();
  auto current = get_alarm(session_keys::kIdleAlarm).value_or_throw();
  if (current && *current <= deadline) return;
  set_alarm(session_keys::kIdleAlarm, deadline).value_or_throw();
}

void McpSession::on_idle_alarm() {
  if (!meta_) return;  // deleted meanwhile
  auto stored = get(session_keys::kLastActivity).value_or_throw();
  std::int64_t last = stored ? std::stoll(*stored) : meta_->created_ms;
  auto now = clock().now_ms();
  if (now - last >= options_.session_ttl.count()) {
    log::info("session_expired", {{"session", session_id_}, {"idle_ms", now - last}});
    erase();
    return;
  }
  mcp::IdleInput input;
  input.now_ms = now;
  input.last_activity_ms = last;
  input.paused_work = code_ && code_->has_paused();
  input.busy = !live_.empty() || !connections_.empty() || (code_ && code_->running());
  auto decision = mcp::decide(options_.idle, input);
  if (decision.action == mcp::IdleDecision::Action::wait) {
    set_alarm(session_keys::kIdleAlarm, decision.wake_at_ms).value_or_throw();
    return;
  }
  // Out of memory until the next request; the alarm comes back for the TTL.
  set_alarm(session_keys::kIdleAlarm, last + options_.session_ttl.count()).value_or_throw();
  log::debug("session_disposed", {{"session", session_id_}, {"idle_ms", now - last}, {"row", decision.row}});
  dispose();
}


std::uint64_t McpSession::drain() {
  // Interrupting a call finishes it (and erases it from calls_): take them all first.
  std::vector<std::shared_ptr<CallContext>> running;
  for (auto& [key, weak] : calls_) {
    if (auto context = weak.lock()) running.push_back(std::move(context));
  }
  for (auto& call : running) {
    call->interrupt(mcp::interrupted_error(call->request_id(), mcp::ReapReason::server_draining,
                                           epoch().generation));
  }
  // What is still open (the standalone GET, a resumed stream whose calls finished in
  // this turn ended above) ends cleanly: the client resumes against the successor.
  for (auto& [stream, connection] : connections_) {
    // An init-capture: clang before 16 cannot capture a structured binding by name.
    after_commit([this, open = connection] {
      tell_helper(open->sink, caf::make_message(mcp::SinkClose{}));
    });
  }
  connections_.clear();
  if (!running.empty()) {
    log::info("session_drained", {{"session", session_id_},
                                  {"calls", static_cast<std::int64_t>(running.size())}});
  }
  return running.size();
}

}  // namespace dorm::actors
