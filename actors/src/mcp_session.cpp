#include "mcp_session.hpp"

#include "mcp_session_code.hpp"
#include "mcp_session_internal.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>

#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/feature_methods.hpp"
#include "dorm/mcp/protocol_version.hpp"
#include "dorm/mcp/reap_telemetry.hpp"
#include "dorm/mcp/request_checks.hpp"
#include "dorm/mcp/sse_sink.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;

class McpSession::Store : public mcp::SessionStore {
 public:
  explicit Store(McpSession& session) : session_(session) {}
  Result<std::optional<std::string>> get(std::string_view key) override { return session_.get(key); }
  Result<void> put(std::string_view key, std::string_view value) override {
    return session_.put(key, value);
  }
  Result<bool> del(std::string_view key) override { return session_.del(key); }
  Result<std::vector<storage::KeyValue>> list(std::string_view prefix, std::string_view start,
                                              std::size_t limit) override {
    ListOptions options;
    options.prefix = std::string(prefix);
    if (!start.empty()) options.start = std::string(start);
    options.limit = limit;
    return session_.list(options);
  }

 private:
  McpSession& session_;
};

class McpSession::Index : public mcp::InflightIndex {
 public:
  explicit Index(McpSession& session) : session_(session) {}
  Result<void> put(std::string_view request_key) override {
    return session_.index_put(kInflightIndex, session_.inflight_key(request_key), "");
  }
  Result<void> del(std::string_view request_key) override {
    return session_.index_del(kInflightIndex, session_.inflight_key(request_key));
  }

 private:
  McpSession& session_;
};


// ---- the session ----

McpSession::McpSession(const McpSessionOptions& options)
    : options_(options),
      tool_storage_(std::make_unique<Storage>(*this)),
      store_(std::make_unique<Store>(*this)),
      index_(std::make_unique<Index>(*this)),
      log_(*store_, options.event_limits),
      stream_ids_(*store_),
      journal_(*store_, *index_) {
  if (options.code_mode) code_ = std::make_unique<Code>(*this, *options.code_mode);
}

McpSession::~McpSession() = default;

void McpSession::on_start(StartReason) {
  auto stored = get(session_keys::kMeta).value_or_throw();
  if (!stored) return;  // no such session (yet): initialize makes one
  meta_ = mcp::SessionMeta::from_json(*stored).value_or_throw();
  // Whatever the start reason, before any traffic: work a dead activation left
  // unanswered gets its error now, so a client that resumes finds it.
  if (options_.reaper) reap();
}

void McpSession::reap() {
  mcp::Reaper reaper(journal_, log_);
  auto plan = reaper.find(epoch()).value_or_throw();
  const std::string session = id().to_string();
  mcp::log_unreadable(plan, session);
  if (plan.empty()) return;
  auto span = start_span(mcp::kRestartReapSpan);
  auto commit_record = [this](const mcp::Reaper::Step& step) -> Result<void> {
    // The stream finished in this batch: its retention alarm goes in the same batch.
    if (step.finished_stream) {
      if (auto ok = cover_finished_stream(); !ok) return ok;
    }
    return commit();
  };
  auto report = reaper.run(plan, epoch(), clock().now_ms(), commit_record);
  mcp::record_reap(span, report, session, epoch().generation);
  // Counted now: each reaped request's error committed with its own batch (commit_record).
  if (auto* counters = options_.counters) {
    counters->reaped_server_restart.fetch_add(report.server_restart, std::memory_order_relaxed);
    counters->reaped_session_reset.fetch_add(report.session_reset, std::memory_order_relaxed);
  }
  // The records not reached are untouched: failing the start resets this object, and the
  // next activation reaps them.
  if (report.failure) throw std::runtime_error("restart reap: " + report.failure->describe());
}

caf::behavior McpSession::behavior() {
  return {
      [this](const SessionCall& call) { handle(call); },
      // Nothing to do: activating ran on_start, which reaped. Not client activity.
      [](const mcp::SessionWake&) { return true; },
      [this](const mcp::SessionDrain&) { return drain(); },
      [this](const mcp::ResourceUpdated& update) { on_resource_updated(update); },
      // Code mode: a resume forwarded by another session, and the answer to one.
      [this](const ForwardedResume& request) {
        if (code_) code_->forwarded_resume(request);
      },
      [this](const ForwardedResumeResult& result) {
        if (code_) code_->forwarded_result(result);
      },
      // The approval page (approval_page.hpp).
      [this](const ApprovalView& request) -> std::string {
        if (!code_ || !meta_) return approval_unavailable();
        return code_->approval_view(request);
      },
      [this](const ApprovalDecision& request) -> std::string {
        if (!code_ || !meta_) return approval_unavailable();
        return code_->approval_decide(request);
      },
  };
}

std::string McpSession::approval_unavailable() {
  // A session that does not exist (any more) keeps nothing in memory either.
  if (!meta_) dispose_empty();
  return R"({"status":404,"error":"This execution's session is gone."})";
}

void McpSession::answer_now(const SessionCall& call, HttpResponse response) {
  // Behind the output gate: what this turn stored is durable before the client hears.
  after_commit([responder = call.responder, response = std::move(response)]() mutable {
    if (responder) responder->respond(std::move(response));
  });
}

void McpSession::handle(const SessionCall& call) {
  session_id_ = call.session_id;
  if (call.kind == SessionCall::Kind::initialize) {
    if (!check_storage_space()) {
      // Nothing could be stored, so no session: refused before anything is made.
      dispose_empty();
      return answer_now(call, rejected(mcp::Rejection::storage_full()));
    }
    answer_now(call, initialize(call));
    // A refused initialize stored nothing: leave no activation behind (see below).
    if (!meta_) dispose_empty();
    return;
  }
  if (!meta_) {
    // No such session (never made, deleted, or an id the client made up), so nothing is
    // stored under this id. The session namespace has no runtime idle eviction, so an
    // activation kept here would stay for good: any client could grow the process by
    // sending made-up ids. It leaves memory, and the directory keeps no record of it.
    dispose_empty();
    return answer_now(call, rejected(mcp::Rejection::unknown_session()));
  }
  if (!(call.caller == meta_->owner)) {
    // Same answer as for a session that does not exist: the caller learns nothing.
    log::warn("session_owner_mismatch", {{"session", call.session_id},
                                         {"owner_user", meta_->owner.user},
                                         {"owner_org", meta_->owner.org},
                                         {"caller_user", call.caller.user},
                                         {"caller_org", call.caller.org}});
    return answer_now(call, rejected(mcp::Rejection::unknown_session()));
  }
  // A full store refuses every commit (storage's space reserve). A request that has to
  // write is answered 507 here, before any tool runs or anything is stored; this turn then
  // has nothing to commit, so the answer goes out. A resume only reads: it still replays,
  // without recording activity. (Space that runs out between this check and the commit
  // fails the turn with no_space instead, which the endpoint answers with the same 507.)
  if (!check_storage_space()) {
    if (call.kind == SessionCall::Kind::get && call.last_event_id) return resume(call);
    return answer_now(call, rejected(mcp::Rejection::storage_full()));
  }
  note_activity();
  switch (call.kind) {
    case SessionCall::Kind::post: return post(call);
    case SessionCall::Kind::remove: return answer_now(call, remove());
    case SessionCall::Kind::get:
      if (call.last_event_id) return resume(call);
      return open_standalone(call);
    case SessionCall::Kind::initialize: break;
  }
}

// Exactly what this server has: a capability for each kind of thing registered. The
// registries are fixed at start-up, so no list ever changes (listChanged: false).
void McpSession::post(const SessionCall& call) {
  if (auto refused = refuse_post(call)) return answer_now(call, std::move(*refused));
  auto exchange = std::make_shared<Exchange>();
  exchange->responder = call.responder;
  const bool requests = std::any_of(call.messages.begin(), call.messages.end(),
                                    [](const Message& m) { return m.kind == Message::Kind::request; });
  if (requests) open_stream(exchange, call.messages);
  for (const auto& m : call.messages) take(m, exchange);
  if (!requests) {
    exchange->advance(Exchange::Phase::done);
    return answer_now(call, HttpResponse{202, {}, {}});
  }
  exchange->advance(Exchange::Phase::sealed);
  complete(exchange);
  if (exchange->phase == Exchange::Phase::done) return;
  // Work goes on after this turn: the response continues as a live stream.
  exchange->advance(Exchange::Phase::streaming);
  auto responder = std::move(exchange->responder);
  if (exchange->close_requested) {
    // A tool closed the connection at once (SSE polling): what is written so far ends
    // the response; the rest waits in the log for the client's resume.
    return after_commit([responder, body = std::move(exchange->body)]() mutable {
      responder->respond(sse_response(std::move(body)));
    });
  }
  open_connection(exchange->stream, responder, std::move(exchange->body));
}

std::optional<HttpResponse> McpSession::refuse_post(const SessionCall& call) {
  if (call.batch && !mcp::allows_batch(meta_->protocol_version)) return rejected(mcp::Rejection::bad_batch());
  if (auto reused = reused_request_id(call.messages)) {
    // Refused before anything runs or is stored. The id of the error is null, not the
    // reused one: a client must not take this for the answer to the request still running.
    return bad_request(std::nullopt, mcp::kInvalidRequest,
                       "request id " + reused->to_json() +
                           " is already in use by a request in flight in this session; use a new id");
  }
  // An initialize in an existing session is refused whole, before anything runs or is
  // stored: found only while answering, it left the other elements of a batch run and a
  // stream opened (and a lease held) that nothing would ever finish.
  for (const auto& m : call.messages) {
    if (m.kind == Message::Kind::request && m.method == "initialize") {
      return bad_request(m.id, mcp::kInvalidRequest,
                         "this session is already initialized: send initialize without "
                         "MCP-Session-Id to start a new one");
    }
  }
  return std::nullopt;
}

void McpSession::open_stream(const std::shared_ptr<Exchange>& exchange, const std::vector<Message>& messages) {
  exchange->lease = keep_alive();
  // The response is a stream of its own, stored as it is written. Sessions that
  // negotiated 2025-11-25 get a priming event first, so a client can resume even a
  // stream that dropped before any work was done.
  auto first = std::find_if(messages.begin(), messages.end(),
                            [](const Message& m) { return m.kind == Message::Kind::request; });
  const std::string first_request = first->id->to_key();
  std::int64_t retry = options_.priming && mcp::wants_priming(meta_->protocol_version) ? options_.retry_ms : 0;
  exchange->stream = stream_ids_.next().value_or_throw();
  log_.open(exchange->stream, first_request, retry).value_or_throw();
  if (retry > 0) exchange->body = sse_priming(mcp::EventId{exchange->stream, 0}, retry);
  live_.emplace(exchange->stream, exchange);
}

void McpSession::take(const Message& m, const std::shared_ptr<Exchange>& exchange) {
  switch (m.kind) {
    case Message::Kind::request:
      answer(m, exchange);
      break;
    case Message::Kind::notification:
      if (m.method == "notifications/initialized" && !meta_->initialized) {
        meta_->initialized = true;
        store_meta();
      } else if (m.method == "notifications/cancelled") {
        cancel(m);
      }
      break;
    case Message::Kind::result_response:
    case Message::Kind::error_response:
      // Answers to requests tools sent the client: each goes to its waiting tool, as
      // part of this turn. One that matches nothing is accepted (202) and dropped: a
      // replayed or stale answer must not fail the client.
      take_client_reply(m);
      break;
  }
}

std::optional<mcp::RequestId> McpSession::reused_request_id(const std::vector<Message>& messages) {
  std::set<std::string> in_this_post;
  for (const auto& m : messages) {
    if (m.kind != Message::Kind::request) continue;
    auto key = m.id->to_key();
    if (!in_this_post.insert(key).second) return m.id;
    if (journal_.contains(*m.id).value_or_throw()) return m.id;
  }
  return std::nullopt;
}

void McpSession::cancel(const Message& notification) {
  // Invalid or stale cancellations are ignored (MCP: the receiver MAY ignore them).
  rapidjson::Document params;
  if (!parse_params(notification, params)) return;
  const rapidjson::Value* id = member(params, "requestId");
  if (!id) return;
  std::optional<mcp::RequestId> request;
  if (id->IsString()) request = mcp::RequestId(std::string(id->GetString(), id->GetStringLength()));
  if (id->IsInt64()) request = mcp::RequestId(id->GetInt64());
  if (!request) return;
  auto it = calls_.find(request->to_key());
  if (it == calls_.end()) return;
  auto context = it->second.lock();
  if (!context) return;
  log::info("request_cancelled", {{"session", session_id_}, {"request", request->to_json()}});
  context->cancel();
}

void McpSession::Exchange::advance(Phase next) {
  const bool allowed = (phase == Phase::reading && (next == Phase::sealed || next == Phase::done)) ||
                       (phase == Phase::sealed && (next == Phase::streaming || next == Phase::done)) ||
                       (phase == Phase::streaming && next == Phase::done);
  if (!allowed) {
    throw std::logic_error("exchange of stream " + mcp::stream_key(stream) + ": phase " +
                           std::to_string(static_cast<int>(phase)) + " cannot become " +
                           std::to_string(static_cast<int>(next)));
  }
  phase = next;
}

void McpSession::complete(const std::shared_ptr<Exchange>& exchange) {
  using Phase = Exchange::Phase;
  if (exchange->outstanding > 0 || exchange->phase == Phase::reading || exchange->phase == Phase::done) return;
  const bool streamed = exchange->phase == Phase::streaming;
  exchange->advance(Phase::done);
  live_.erase(exchange->stream);
  log_.finish(exchange->stream, clock().now_ms()).value_or_throw();
  cover_finished_stream().value_or_throw();
  if (streamed) {
    // The stream's connection (if the client has one open) ends after its last event.
    deliver(exchange->stream, {}, true);
    after_commit([exchange] { exchange->lease = Lease(); });
    return;
  }
  // Everything happened inside the POST's own turn: one plain response.
  after_commit([exchange] {
    exchange->responder->respond(sse_response(std::move(exchange->body)));
    exchange->lease = Lease();
  });
}

void McpSession::emit(Exchange& exchange, std::string message,
                      const std::optional<mcp::RequestId>& final_for) {
  auto id = log_.append(exchange.stream, message);
  if (!id && id.error().code == ErrorCode::limit_exceeded && final_for) {
    // A result too large to keep (and so to resume) is replaced by an error result that
    // says how large it was.
    message = mcp::result_response(
        *final_for, mcp::ToolResult::error("the result of " + std::to_string(message.size()) +
                                           " bytes is over the stream limit of " +
                                           std::to_string(options_.event_limits.max_bytes) +
                                           " bytes")
                        .json);
    id = log_.append(exchange.stream, message);
  }
  if (!id) throw ErrorException(std::move(id).error());
  if (exchange.in_turn()) {
    exchange.body += sse_event(*id, message);
  } else {
    deliver(exchange.stream, sse_event(*id, message), false);
  }
}

void McpSession::journal_put(const mcp::RequestId& id, std::uint64_t stream) {
  journal_.put(mcp::JournalRecord{id, stream, epoch()}).value_or_throw();
}

void McpSession::journal_del(const mcp::RequestId& id) {
  journal_.del(id).value_or_throw();
}

Result<void> McpSession::cover_finished_stream() {
  // A stream that finishes now expires after every stream already finished: an armed
  // retention alarm is early enough, and on_alarm re-arms for the next one.
  auto armed = get_alarm(session_keys::kRetentionAlarm);
  if (!armed) return std::move(armed).error();
  if (*armed) return {};
  return set_alarm(session_keys::kRetentionAlarm, clock().now_ms() + options_.event_limits.retention_ms);
}

void McpSession::arm_retention() {
  if (auto next = log_.next_expiry().value_or_throw()) set_alarm(session_keys::kRetentionAlarm, *next).value_or_throw();
}

void McpSession::on_alarm(const AlarmInfo& info) {
  if (info.name == session_keys::kIdleAlarm) return on_idle_alarm();
  if (code_ && meta_ && code_->on_alarm(info)) return;
  if (info.name != session_keys::kRetentionAlarm) return;
  log_.expire(clock().now_ms()).value_or_throw();
  arm_retention();
}

void McpSession::answer(const Message& request, const std::shared_ptr<Exchange>& exchange) {
  const auto& method = request.method;
  const auto& id = *request.id;
  const auto& params = request.params;
  const std::size_t page = options_.page_size;
  auto reply = [&](const mcp::MethodResult& result) { emit(*exchange, mcp::to_response(id, result)); };
  if (method == "ping") return emit(*exchange, mcp::result_response(id, "{}"));
  if (method == "tools/call") return call_tool(request, exchange);
  if (method == "tools/list") return reply(mcp::tools_list_result(options_.tools, params, page));
  if (method == "resources/list") return reply(mcp::resources_list_result(options_.resources, params, page));
  if (method == "resources/templates/list") {
    return reply(mcp::resources_templates_list_result(options_.resources, params, page));
  }
  if (method == "resources/read") {
    return reply(mcp::resources_read_result(options_.resources, params, *tool_storage_));
  }
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    if (!options_.resources || !options_.resources->supports_subscribe()) {
      return emit(*exchange, mcp::error_response(request.id, mcp::kMethodNotFound,
                                                 "this server offers no resource subscriptions"));
    }
    return emit(*exchange, subscribe(request, method == "resources/subscribe"));
  }
  if (method == "prompts/list") return reply(mcp::prompts_list_result(options_.prompts, params, page));
  if (method == "prompts/get") return reply(mcp::prompts_get_result(options_.prompts, params, *tool_storage_));
  if (method == "completion/complete") {
    return reply(mcp::completion_complete_result(options_.resources, options_.prompts, params));
  }
  if (method == "logging/setLevel") return emit(*exchange, set_log_level(request));
  emit(*exchange, mcp::error_response(request.id, mcp::kMethodNotFound,
                                      "method not found: " + method));
}

std::string McpSession::set_log_level(const Message& request) {
  rapidjson::Document params;
  const rapidjson::Value* level = parse_params(request, params) ? member(params, "level") : nullptr;
  if (!level || !level->IsString() || log_rank(string_of(*level)) < 0) {
    return mcp::error_response(request.id, mcp::kInvalidParams,
                               "params.level must be one of debug, info, notice, warning, "
                               "error, critical, alert, emergency");
  }
  meta_->log_level = std::string(string_of(*level));
  store_meta();
  return mcp::result_response(*request.id, "{}");
}

void McpSession::call_tool(const Message& request, const std::shared_ptr<Exchange>& exchange) {
  rapidjson::Document params;
  const rapidjson::Value* name = parse_params(request, params) ? member(params, "name") : nullptr;
  if (!name || !name->IsString()) {
    return emit(*exchange, mcp::error_response(request.id, mcp::kInvalidParams,
                                               "tools/call needs params.name (a string)"));
  }
  const mcp::ToolRegistry::Entry* entry =
      options_.tools ? options_.tools->find(string_of(*name)) : nullptr;
  if (!entry) {
    return emit(*exchange, mcp::error_response(request.id, mcp::kInvalidParams,
                                               "unknown tool: " + std::string(string_of(*name))));
  }
  std::string arguments = "{}";
  if (const rapidjson::Value* args = member(params, "arguments")) {
    if (!args->IsObject()) {
      return emit(*exchange, mcp::error_response(request.id, mcp::kInvalidParams,
                                                 "params.arguments must be an object"));
    }
    arguments = compact(*args);
  }
  std::string progress_token;
  if (const rapidjson::Value* meta = member(params, "_meta")) {
    const rapidjson::Value* token = member(*meta, "progressToken");
    if (token && token->IsString() && token->GetStringLength() > mcp::kMaxProgressTokenBytes) {
      return emit(*exchange, mcp::error_response(
                                 request.id, mcp::kInvalidParams,
                                 "params._meta.progressToken is " +
                                     std::to_string(token->GetStringLength()) +
                                     " bytes; the limit is " +
                                     std::to_string(mcp::kMaxProgressTokenBytes)));
    }
    if (token && (token->IsString() || token->IsInt64())) progress_token = compact(*token);
  }
  if (auto valid = options_.tools->validate_arguments(*entry, arguments); !valid) {
    return emit(*exchange,
                mcp::result_response(*request.id, mcp::ToolResult::error(valid.error().message).json));
  }
  ++exchange->outstanding;
  log::debug("tool_call_started", {{"session", session_id_},
                                   {"tool", std::string(string_of(*name))},
                                   {"request", request.id->to_json()}});
  auto context = std::make_shared<CallContext>(*this, *entry, exchange, *request.id, std::move(arguments),
                                               std::move(progress_token));
  calls_[request.id->to_key()] = context;
  const auto& handler = options_.tools->spec(*entry).handler;
  context->run([&] { handler(context); });
  // The journal record (what the reaper answers after a crash) is written only for a call
  // still running when its first turn ends, in that turn's batch, as before the handler
  // ran would have been. A call that finished in this turn has its final response in the
  // same batch: a crash keeps both or neither, so there is nothing to reap, and writing the
  // record and its index entry only to delete them left two tombstones in the store per
  // call.
  if (!context->finished()) {
    journal_put(*request.id, exchange->stream);
    context->mark_journaled();
  }
}

std::string McpSession::inflight_key(std::string_view request_key) const {
  return mcp::inflight_entry(id().to_string(), request_key);
}

HttpResponse McpSession::remove() {
  erase();
  return HttpResponse{200, {}, {}};
}

void McpSession::erase() {
  // Index entries live outside the session's keys: delete_all() would leave them.
  ListOptions journal;
  journal.prefix = std::string(session_keys::kJournal);
  for (const auto& kv : list(journal).value_or_throw()) {
    auto request_key = session_keys::journal_request_key(kv.key);
    if (request_key) index_del(kInflightIndex, inflight_key(*request_key)).value_or_throw();
  }
  erase_subscriptions();
  if (code_) code_->erase();
  live_.clear();
  calls_.clear();
  standalone_.reset();
  stream_ids_.forget();
  // Open connections end with the session (cleanly: there is nothing left to resume).
  for (auto& [stream, connection] : connections_) {
    after_commit([this, connection = connection] {
      tell_helper(connection->sink, caf::make_message(mcp::SinkClose{}));
    });
  }
  connections_.clear();
  delete_all().value_or_throw();
  if (auto* counters = options_.counters; counters && meta_) {
    after_commit([counters] { counters->deleted.fetch_add(1, std::memory_order_relaxed); });
  }
  meta_.reset();
  // Nothing is stored any more, so nothing stays in memory either: running calls stop
  // with the activation (their timers never fire), and no record of the id is kept.
  dispose_empty();
}

void McpSession::store_meta() {
  put(session_keys::kMeta, meta_->to_json()).value_or_throw();
}

Result<void> register_mcp_session(Runtime& runtime, const McpSessionOptions& options) {
  if (options.code_mode) {
    if (auto ok = register_execution_owner(runtime, options.counters); !ok) return ok;
  }
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::milliseconds(0);  // the idle policy evicts sessions
  ns.storage_cache_bytes = options.storage_cache_bytes;
  // Streams and their events are written once per call and read back only by a resume or
  // their expiry: kept in the cache, they filled it within seconds under load and pushed
  // out what every call reads, and a call's cost grew with the session's age.
  ns.uncached_prefixes = {std::string(session_keys::kEvents), std::string(session_keys::kStreams)};
  return runtime.register_namespace(
      kMcpSessionNamespace, [&options] { return std::make_unique<McpSession>(options); }, ns);
}

}  // namespace dorm::actors
