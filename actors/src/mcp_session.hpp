// McpSession — the durable object behind one MCP session (what it promises:
// dorm/actors/mcp_session.hpp). Internal to actors/: its parts live in mcp_session*.cpp,
// with the state they share in mcp_session_internal.hpp.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/event_log.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/session_meta.hpp"
#include "dorm/mcp/stream_ids.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

class McpSession : public DurableObject {
 public:
  explicit McpSession(const McpSessionOptions& options);
  ~McpSession() override;
  void on_start(StartReason reason) override;
  caf::behavior behavior() override;
  void on_alarm(const AlarmInfo& info) override;

  // One HTTP response being built, and the tool calls it waits for.
  struct Exchange;
  struct Connection;
  class CallContext;
  class Code;      // code mode (mcp_session_code.cpp)
  class CodeCall;  // a tool called by code
  class Storage;
  class Store;
  class Index;

 private:
  void handle(const mcp::SessionCall& call);
  mcp::HttpResponse initialize(const mcp::SessionCall& call);
  void write_capabilities(rapidjson::Writer<rapidjson::StringBuffer>& w) const;
  void post(const mcp::SessionCall& call);
  // Why a POST is refused whole before anything of it runs or is stored, if it is: a
  // batch the negotiated revision does not allow, a reused request id, an initialize.
  std::optional<mcp::HttpResponse> refuse_post(const mcp::SessionCall& call);
  // Opens the stream a POST with requests answers on (priming event first when the
  // revision wants one) and keeps the exchange live.
  void open_stream(const std::shared_ptr<Exchange>& exchange, const std::vector<mcp::Message>& messages);
  // One message of a POST: a request is answered on `exchange`; a notification or a
  // client's answer is taken in this turn.
  void take(const mcp::Message& message, const std::shared_ptr<Exchange>& exchange);
  // The first request id of `messages` that is already in flight in this session (it has
  // a journal record) or repeats an earlier request of the same POST; none if all are
  // fresh. One id names one request at a time (MCP forbids reusing an id within a
  // session): the journal keeps one record per id, so a second call under a running
  // call's id would, on finishing, delete the first one's record — after a crash that
  // call would never be reaped and its client would hang. Cancellation finds calls by id
  // too. So a POST carrying such an id is refused whole (-32600), before it runs.
  std::optional<mcp::RequestId> reused_request_id(const std::vector<mcp::Message>& messages);
  mcp::HttpResponse remove();
  // Answers one request of a POST on `exchange`: at once, or (tools/call) once its tool
  // finishes.
  void answer(const mcp::Message& request, const std::shared_ptr<Exchange>& exchange);
  std::string set_log_level(const mcp::Message& request);
  void call_tool(const mcp::Message& request, const std::shared_ptr<Exchange>& exchange);
  // Sends the exchange's response once it has everything (after this turn commits).
  void complete(const std::shared_ptr<Exchange>& exchange);
  void store_meta();
  // A client request: stores the time and sets the idle alarm (docs/architecture.md#idle-sessions).
  void note_activity();
  void on_idle_alarm();
  // Deletes everything the session stored (DELETE, or the TTL) and ends this activation
  // once the turn commits, leaving nothing in memory.
  void erase();
  void answer_now(const mcp::SessionCall& call, mcp::HttpResponse response);
  // Stores `message` in the exchange's stream and adds it to the response. `final_for`:
  // the message is that request's final response (one too large to keep is replaced by an
  // error result naming its size).
  void emit(Exchange& exchange, std::string message,
            const std::optional<mcp::RequestId>& final_for = std::nullopt);
  // A GET with Last-Event-ID: replay after the cursor; on a stream still open, this
  // connection then carries it live.
  void resume(const mcp::SessionCall& call);
  // A GET without Last-Event-ID: the standalone stream, from what no GET carried yet.
  void open_standalone(const mcp::SessionCall& call);
  // notifications/cancelled.
  void cancel(const mcp::Message& notification);
  // SessionDrain: stops every running call with the server_draining error and ends every
  // open connection; returns how many calls it stopped.
  std::uint64_t drain();
  // Sends framed SSE bytes to the stream's open connection, if any, after this turn
  // commits; `end` ends that connection's response.
  void deliver(std::uint64_t stream, std::string bytes, bool end);
  // Answers `responder` with a live SSE response for `stream` that starts with
  // `first_bytes`; replaces the stream's previous connection.
  void open_connection(std::uint64_t stream, std::shared_ptr<mcp::Responder> responder,
                       std::string first_bytes);
  // Server-initiated close of the exchange's connection (the client resumes after the
  // retry hint). Only on resumable streams (with a priming event).
  void close_connection(Exchange& exchange);
  // The standalone stream (created on first use) and its cursor.
  std::uint64_t standalone_stream();
  void store_standalone_cursor();
  void emit_standalone(std::string message);
  void journal_put(const mcp::RequestId& id, std::uint64_t stream);
  void journal_del(const mcp::RequestId& id);
  // Answers what a dead activation left in the journal (on_start only: one batch per
  // record), with the restart_reap span and log line.
  void reap();
  // Sets the retention alarm for the earliest finished stream's expiry (scans them all:
  // only from the alarm itself).
  void arm_retention();
  // Makes sure the retention alarm covers a stream finished in this turn (without
  // scanning the streams: see the definition).
  Result<void> cover_finished_stream();
  // Requests tools send to the client (mcp_session_requests.cpp). client_accepts: whether
  // the client declared what `method` needs. send_client_request: emits the request on
  // `exchange` and keeps `deliver` for the answer (or the timeout). take_client_reply: a
  // response the client POSTed. drop_client_requests: the call `call_key` ended.
  Result<void> client_accepts(std::string_view method, std::string_view params_json) const;
  Result<void> send_client_request(Exchange& exchange, const std::string& call_key,
                                   std::string_view method, std::string_view params_json,
                                   mcp::ClientReplyHandler deliver);
  void take_client_reply(const mcp::Message& response);
  void drop_client_requests(const std::string& call_key);
  // Resource subscriptions (mcp_session_resources.cpp). subscribe: resources/subscribe
  // (on) or /unsubscribe. on_resource_updated: a ResourceUpdated message. tell_subscribers:
  // a tool said `uri` changed. erase_subscriptions: their index entries, for erase().
  std::string subscribe(const mcp::Message& request, bool on);
  void on_resource_updated(const mcp::ResourceUpdated& update);
  void tell_subscribers(std::string_view uri);
  void erase_subscriptions();
  // This session's key in the runtime index of sessions with requests in flight.
  std::string inflight_key(std::string_view request_key) const;
  // The approval page's reply when there is no session or no code mode.
  std::string approval_unavailable();

  const McpSessionOptions& options_;
  std::optional<mcp::SessionMeta> meta_;  // none: no such session (never made, or deleted)
  std::unique_ptr<Storage> tool_storage_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Index> index_;
  mcp::EventLog log_;
  mcp::StreamIds stream_ids_;
  mcp::InflightJournal journal_;
  std::map<std::uint64_t, std::shared_ptr<Exchange>> live_;  // streams still being written
  std::map<std::uint64_t, std::shared_ptr<Connection>> connections_;  // open SSE connections
  std::map<std::string, std::weak_ptr<CallContext>> calls_;  // running tool calls, by request key
  // Requests sent to the client and not answered yet, by request key; and the counter
  // that makes their ids.
  struct Outbound {
    std::string call_key;  // the tools/call that sent it
    mcp::ClientReplyHandler deliver;
  };
  std::map<std::string, Outbound> outbound_;
  std::uint64_t outbound_sequence_ = 0;
  std::optional<mcp::EventId> standalone_;  // cached cursor of the standalone stream
  std::string session_id_;  // as the last call named it (for logs)
  std::unique_ptr<Code> code_;  // null unless code mode is on
};

}  // namespace dorm::actors
