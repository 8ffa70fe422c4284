// Code mode inside a session: see mcp_session_code.hpp for the storage layout and the
// record states, and docs/code-mode.md for what users see.
#include "mcp_session_code.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <span>

#include "code_builtins.hpp"
#include "modern_code.hpp"
#include "start_hold.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/engine/wire.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;
using namespace code_detail;

namespace {

// exec_<uuid v4>: random, so unique across sessions, restarts and processes.
std::string new_execution_id() {
  std::string h = random_hex(16);
  h[12] = '4';
  h[16] = "89ab"[static_cast<unsigned char>(h[16]) % 4];
  return "exec_" + h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

}  // namespace

// ---- a running execution ----

bool McpSession::Code::is_warm(const Live& live) { return live.warm; }

void McpSession::Code::leave_warm(Live& live) {
  if (!live.warm) return;
  live.warm = false;
  options_.warm_now.fetch_sub(1);
}

// Engine callbacks arrive on the pool's thread; each becomes a turn of the session. A
// post that outlives the activation is dropped, so `code` is valid whenever one runs.
// Callbacks made inside Pool::start on the session's own thread are held (start_hold.hpp)
// and run at the end of the starting turn (Code::run_held).
class McpSession::Code::Observer : public engine::ExecutionObserver {
 public:
  using Held = std::function<void(Code&, const std::shared_ptr<Live>&)>;
  Observer(Inbox inbox, Code* code, std::weak_ptr<Live> live)
      : inbox_(std::move(inbox)), code_(code), live_(std::move(live)) {}

  StartHold<Held> start_hold;

  void on_tool_call(const engine::ToolCallEntry& call) override {
    post([call](Code& code, const std::shared_ptr<Live>& live) { code.on_tool_call(live, call); });
  }
  void on_log(engine::wire::LogLevel level, std::string_view text) override {
    post([line = engine::format_log_line(level, text)](Code&, const std::shared_ptr<Live>& live) {
      live->logs.push_back(line);
    });
  }
  void on_emit(std::string_view value_json) override {
    post([value = std::string(value_json)](Code&, const std::shared_ptr<Live>& live) {
      live->emitted.push_back(value);
    });
  }
  void on_completed(std::string_view result_json) override {
    post([result = std::string(result_json)](Code& code, const std::shared_ptr<Live>& live) {
      mcp::ExecutionOutcome outcome;
      outcome.status = mcp::ExecutionOutcome::Status::completed;
      // The engine reports `undefined` as null; either is "no result", as in the original.
      if (result != "null") outcome.result_json = result;
      outcome.emitted_json = live->emitted;
      outcome.logs = live->logs;
      code.settle(live, mcp::format_execution_outcome(outcome));
    });
  }
  void on_failed(engine::FailureKind kind, std::string_view message) override {
    post([kind, message = std::string(message)](Code& code, const std::shared_ptr<Live>& live) {
      code.on_failed(live, kind, message);
    });
  }

 private:
  template <class F>
  void post(F fn) {
    if (auto live = live_.lock(); !live || live->ended) return;
    if (start_hold.holding()) return start_hold.keep(std::move(fn));
    inbox_.post([code = code_, weak = live_, fn = std::move(fn)] {
      auto live = weak.lock();
      if (live && !live->ended) fn(*code, live);
    });
  }
  Inbox inbox_;
  Code* code_;
  std::weak_ptr<Live> live_;
};

// ---- a tool called by code ----

// The ToolContext of a tool that code called: its arguments, the session's tool storage,
// and, while an execute or resume call waits on the execution, that call's client for
// logs and requests. Progress is not forwarded (code calls carry no progress token), nor
// can it close a connection that is not its own.
class McpSession::CodeCall : public mcp::ToolContext, public std::enable_shared_from_this<CodeCall> {
 public:
  using Done = std::function<void(const mcp::ToolResult&)>;
  CodeCall(McpSession& session, std::string arguments, std::weak_ptr<CallContext> caller, Done done)
      : session_(session),
        inbox_(session.inbox()),
        arguments_(std::move(arguments)),
        caller_(std::move(caller)),
        done_(std::move(done)) {}

  const std::string& arguments() const override { return arguments_; }
  mcp::ToolStorage& storage() override { return *session_.tool_storage_; }
  bool wants_progress() const override { return false; }
  void progress(double, std::optional<double>, std::string_view) override {}
  void log(std::string_view level, std::string_view data_json) override {
    if (auto caller = caller_.lock(); caller && !finished_) caller->log(level, data_json);
  }
  void after(std::chrono::milliseconds delay, std::function<void()> then) override {
    session_.after(delay, [self = shared_from_this(), then = std::move(then)] {
      if (!self->finished_) self->run(then);
    });
  }
  void post(std::function<void()> then) override {
    inbox_.post([self = shared_from_this(), then = std::move(then)] {
      if (!self->finished_) self->run(then);
    });
  }
  void close_connection() override {}
  void notify_session(std::string_view method, std::string_view params_json) override {
    if (!finished_) session_.emit_standalone(mcp::notification(method, params_json));
  }
  Result<void> request(std::string_view method, std::string_view params_json,
                       mcp::ClientReplyHandler on_reply) override {
    auto caller = caller_.lock();
    if (finished_ || !caller || caller->finished()) {
      return Error{ErrorCode::invalid_argument,
                   "no client call is waiting on this execution to carry a request to the client"};
    }
    return caller->request(method, params_json,
                           [self = shared_from_this(), on_reply = std::move(on_reply)](const mcp::ClientReply& r) {
                             if (!self->finished_) self->run([&] { on_reply(r); });
                           });
  }
  void resource_updated(std::string_view uri) override {
    if (!finished_) session_.tell_subscribers(uri);
  }
  void finish(mcp::ToolResult result) override {
    if (finished_) return;
    finished_ = true;
    done_(result);
  }
  bool finished() const override { return finished_; }
  // As CallContext::run: a throw finishes the call with an error result, except a store
  // failure, which fails the turn.
  void run(const std::function<void()>& step) {
    run_tool_step(step, [this](mcp::ToolResult r) { finish(std::move(r)); });
  }

 private:
  McpSession& session_;
  Inbox inbox_;  // taken in the turn: post() may come from any thread
  std::string arguments_;
  std::weak_ptr<CallContext> caller_;
  Done done_;
  bool finished_ = false;
};
// ---- the session's side ----

McpSession::Code::Code(McpSession& session, const CodeModeOptions& options) : session_(session), options_(options) {}

McpSession::Code::~Code() {
  for (auto& [id, live] : live_) {
    leave_warm(*live);
    live->ended = true;
    if (live->exec) live->exec->cancel();
  }
}

bool McpSession::Code::has_paused() {
  ListOptions records;
  records.prefix = std::string(session_keys::kExecutions);
  records.limit = 1;
  return !session_.list(records).value_or_throw().empty();
}

void McpSession::Code::erase() {
  for (auto& [id, live] : live_) stop_live(*live);
  live_.clear();
}

std::shared_ptr<McpSession::Code::Live> McpSession::Code::start(const std::string& id, const std::string& code,
                                                                std::optional<engine::Journal> journal,
                                                                std::optional<Waiter> waiter) {
  auto live = std::make_shared<Live>();
  live->id = id;
  live->code = code;
  if (waiter) live->waiters.push_back(*waiter);
  live->lease = session_.keep_alive();
  auto observer = std::make_shared<Observer>(session_.inbox(), this, live);
  engine::ExecutionRequest request{id, code, options_.limits, std::move(journal)};
  observer->start_hold.hold();
  auto exec = options_.pool->start(std::move(request), observer);
  live->held = observer->start_hold.release();
  if (!exec) {
    // Bad input was checked before; what is left is a full queue.
    live->ended = true;
    mcp::ExecutionOutcome outcome;
    outcome.status = mcp::ExecutionOutcome::Status::error;
    outcome.error = "engine_overloaded: " + exec.error().message;
    answer_waiters(*live, mcp::format_execution_outcome(outcome));
    return nullptr;
  }
  live->exec = std::move(exec).value();
  live_[id] = live;
  if (waiter) watch_cancel(live, *waiter);
  return live;
}

void McpSession::Code::run_held(const std::shared_ptr<Live>& live) {
  auto held = std::move(live->held);
  live->held.clear();
  for (auto& fn : held) {
    if (live->ended) return;
    fn(*this, live);
  }
}

void McpSession::Code::watch_cancel(const std::shared_ptr<Live>& live, const Waiter& waiter) {
  if (!waiter.call) return;
  std::weak_ptr<Live> weak = live;
  waiter.call->on_cancel = [this, weak] {
    // The client gave up on this call; the execution stops when no one waits for it.
    auto l = weak.lock();
    if (!l || l->ended || l->caller()) return;
    stop_live(*l);
    live_.erase(l->id);
  };
}

void McpSession::Code::resume_warm(const std::shared_ptr<Live>& live, Answer answer, std::optional<Waiter> waiter) {
  auto record = read_record(live->id);
  leave_warm(*live);
  if (waiter) {
    live->waiters.push_back(*waiter);
    watch_cancel(live, *waiter);
  }
  if (!record) {
    // Cannot happen while warm (the record goes only when it settles); say so rather than guess.
    return settle(live, mcp::format_internal_error("warm-without-record"));
  }
  record->code = live->code;
  record->state = "running";
  write_record(*record, nullptr);
  session_.del(session_keys::approval_answer(record->id)).value_or_throw();
  live->lease = session_.keep_alive();
  live->answer = std::move(answer);
  live->answer_seq = record->pause.seq;
  // The calls set aside at the pause, the paused one first: it gets the answer, any
  // other asks again.
  auto waiting = std::move(live->awaiting);
  live->awaiting.clear();
  for (const auto& [seq, call] : waiting) {
    if (live->ended) break;
    on_tool_call(live, call);
  }
}

void McpSession::Code::execute(const std::shared_ptr<CallContext>& call) {
  rapidjson::Document args;
  args.Parse(call->arguments().c_str());
  const rapidjson::Value* code = member(args, "code");
  std::string text = code && code->IsString() ? std::string(code->GetString(), code->GetStringLength()) : "";
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return call->finish(mcp::ToolResult::error("code must not be empty"));
  text = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
  if (auto live = start(new_execution_id(), text, std::nullopt, Waiter{call, {}})) run_held(live);
}

// ---- what the code calls ----

void McpSession::Code::on_tool_call(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call) {
  if (live->ended) return;
  if (code_builtins::is_builtin(call.path)) return builtin(live, call);
  const mcp::ToolRegistry& tools = *session_.options_.tools;
  const mcp::ToolRegistry::Entry* entry = tools.find(call.path, mcp::Exposure::code);
  if (!entry) {
    return deliver(live, call.seq, false,
                   "unknown tool: " + call.path + " (find tools with tools.search({query}))");
  }
  if (auto valid = tools.validate_arguments(*entry, call.args_json); !valid) {
    return deliver(live, call.seq, false, call.path + ": " + valid.error().message);
  }
  if (tools.spec(*entry).requires_approval) return ask_approval(live, call, *entry);
  run_tool(live, call, *entry);
}

void McpSession::Code::ask_approval(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call,
                                    const mcp::ToolRegistry::Entry& entry) {
  if (live->answer && live->answer_seq == call.seq) {
    Answer answer = std::move(*live->answer);
    live->answer.reset();
    if (answer.action == "accept") return run_tool(live, call, entry);
    std::string why = answer.action == "cancel" ? "cancelled" : "declined";
    rapidjson::Document content;
    content.Parse(answer.content_json.c_str());
    const rapidjson::Value* reason = content.HasParseError() ? nullptr : member(content, "reason");
    std::string message = "the user " + why + " tools." + call.path;
    if (reason && reason->IsString()) message += std::string(" (") + reason->GetString() + ")";
    return deliver(live, call.seq, false, message);
  }
  std::string message = "Approve calling " + call.path + " with " + call.args_json + "?";
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("mode");
  w.String("form");
  w.Key("message");
  w.String(message.c_str());
  w.Key("requestedSchema");
  w.RawValue(kApprovalSchema.data(), kApprovalSchema.size(), rapidjson::kObjectType);
  w.EndObject();
  auto caller = live->caller();
  if (caller) {
    ++live->busy;
    std::weak_ptr<Live> weak = live;
    const std::string path = call.path;
    auto asked = caller->request("elicitation/create", buffer.GetString(),
                                 [this, weak, call, &entry](const mcp::ClientReply& reply) {
                                   auto l = weak.lock();
                                   if (!l || l->ended) return;
                                   --l->busy;
                                   std::string action = "cancel";
                                   if (reply.kind == mcp::ClientReply::Kind::result) {
                                     rapidjson::Document doc;
                                     doc.Parse(reply.json.c_str());
                                     const rapidjson::Value* a = doc.HasParseError() ? nullptr : member(doc, "action");
                                     if (a && a->IsString()) action = a->GetString();
                                   }
                                   if (action == "accept") return run_tool(l, call, entry);
                                   std::string why = action == "decline" ? "declined" : "cancelled";
                                   if (reply.kind == mcp::ClientReply::Kind::timeout) why = "did not answer the approval for";
                                   deliver(l, call.seq, false, "the user " + why + " tools." + call.path);
                                   maybe_pause(l);
                                 });
    if (asked) return;
    --live->busy;  // the client cannot be asked inline (no elicitation): pause instead
  }
  live->awaiting.emplace(call.seq, call);
  maybe_pause(live);
}

void McpSession::Code::run_tool(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call,
                                const mcp::ToolRegistry::Entry& entry) {
  ++live->busy;
  std::weak_ptr<Live> weak = live;
  auto context = std::make_shared<CodeCall>(session_, call.args_json, live->caller(),
                                            [this, weak, seq = call.seq, &entry](const mcp::ToolResult& result) {
                                              auto l = weak.lock();
                                              if (!l || l->ended) return;
                                              --l->busy;
                                              if (auto fits = session_.options_.tools->check_structured(entry, result); !fits) {
                                                log::error("tool_output_schema_mismatch",
                                                           {{"session", session_.session_id_}, {"error", fits.error().message}});
                                                deliver(l, seq, false, fits.error().message);
                                                return maybe_pause(l);
                                              }
                                              auto [ok, value] = code_builtins::value_for_code(result);
                                              deliver(l, seq, ok, std::move(value));
                                              maybe_pause(l);
                                            });
  const auto& handler = session_.options_.tools->spec(entry).handler;
  context->run([&] { handler(context); });
}
void McpSession::Code::deliver(const std::shared_ptr<Live>& live, std::uint32_t seq, bool ok, std::string value) {
  if (live->ended) return;
  // The engine takes a failed call's message as plain text.
  live->exec->deliver_tool_result(seq, ok, std::move(value));
}

// ---- pausing and ending ----

void McpSession::Code::maybe_pause(const std::shared_ptr<Live>& live) {
  if (live->ended || live->busy > 0 || live->awaiting.empty()) return;
  pause(live);
}

// Pauses at the first call that waits for a person, once nothing else is running: the
// journal then holds every result the code has seen, and no tool's work is cut short. The
// other waiting calls are open in the journal; the resumption answers them (asking again).
void McpSession::Code::pause(const std::shared_ptr<Live>& live) {
  engine::Journal journal = live->exec->journal();
  const engine::ToolCallEntry& at = live->awaiting.begin()->second;
  const std::int64_t now = session_.clock().now_ms();
  Record record;
  record.id = live->id;
  record.code = live->code;
  record.state = "paused";
  record.pause = at;
  record.ttl_ms = options_.approval_timeout.count();
  record.expires_at_ms = now + record.ttl_ms;
  std::string approval_token;
  if (!options_.approval_base_url.empty()) {
    approval_token = random_hex(16);
    record.approval_token_sha256 = sha256_hex(approval_token);
  }
  write_record(record, &journal);
  session_.set_alarm(session_keys::approval_alarm(record.id), record.expires_at_ms).value_or_throw();
  // Sent when this turn commits, so the directory never names a pause that is not stored.
  tell_directory(caf::make_message(OwnerPut{OwnerRecord{record.id, session_.id().to_string(), session_.meta_->owner,
                                                        record.expires_at_ms, record.ttl_ms}}),
                 record.id);

  mcp::PausedExecution paused;
  paused.execution_id = record.id;
  paused.now_ms = now;
  paused.ttl_ms = record.ttl_ms;
  paused.message = "Approve calling " + at.path + "?";
  paused.instructions = "Ask the user whether to allow this call, then call resume with executionId " + record.id +
                        " and action accept (run it), decline or cancel (the code sees an error), before the deadline.";
  paused.address = at.path;
  paused.args_json = at.args_json;
  paused.requested_schema_json = std::string(kApprovalSchema);
  if (!approval_token.empty()) {
    paused.approval_url = options_.approval_base_url + "/approve/" + record.id + "?token=" + approval_token;
  }
  log::info("execution_paused", {{"session", session_.session_id_}, {"execution", record.id}, {"tool", at.path}});
  auto result = mcp::format_paused_execution(paused);
  answer_waiters(*live, result);
  // Warm for a while, if a warm place is free: a prompt resume skips the replay. Then
  // cold: the isolate goes.
  // At most max_warm, and never more than half the pool's slots: new work keeps the rest.
  bool warm = false;
  if (options_.warm_window.count() > 0) {
    const std::size_t limit = std::min<std::size_t>(options_.max_warm, options_.pool->stats().slots / 2);
    warm = options_.warm_now.fetch_add(1) < limit;
    if (!warm) options_.warm_now.fetch_sub(1);
  }
  if (!warm) {
    stop_live(*live);
    live_.erase(live->id);
    return;
  }
  live->warm = true;
  live->lease.release();
  std::weak_ptr<Live> weak = live;
  session_.after(options_.warm_window, [this, weak] {
    auto l = weak.lock();
    if (!l || !l->warm) return;
    stop_live(*l);
    live_.erase(l->id);
  });
}

void McpSession::Code::settle(const std::shared_ptr<Live>& live, mcp::ToolResult result) {
  stop_live(*live);
  live_.erase(live->id);
  // If it had paused, its id is out there: a later resume gets this same outcome.
  settle_record(live->id, result);
  answer_waiters(*live, result);
}

void McpSession::Code::on_failed(const std::shared_ptr<Live>& live, engine::FailureKind kind, const std::string& message) {
  if (kind == engine::FailureKind::engine_crashed || kind == engine::FailureKind::engine_overloaded) {
    // Not the code's fault: the client gets a correlation id, the log the cause.
    std::string correlation = random_hex(4);
    log::error("execution_engine_failed", {{"session", session_.session_id_},
                                           {"execution", live->id},
                                           {"kind", std::string(engine::to_string(kind))},
                                           {"error", message},
                                           {"correlation", correlation}});
    return settle(live, mcp::format_internal_error(correlation));
  }
  mcp::ExecutionOutcome outcome;
  outcome.status = mcp::ExecutionOutcome::Status::error;
  outcome.error = message;
  outcome.emitted_json = live->emitted;
  outcome.logs = live->logs;
  settle(live, mcp::format_execution_outcome(outcome));
}

void McpSession::Code::answer_waiters(Live& live, const mcp::ToolResult& result) {
  auto waiters = std::move(live.waiters);
  live.waiters.clear();
  for (auto& w : waiters) {
    if (w.call) {
      w.call->on_cancel = nullptr;
      w.call->finish(result);
    }
    if (w.done) w.done(result);
  }
}

void McpSession::Code::stop_live(Live& live) {
  leave_warm(live);
  if (live.ended) return;
  live.ended = true;
  if (live.exec) live.exec->cancel();  // its `cancelled` report finds it ended and is dropped
  live.lease.release();
}

// ---- the tools ----

Result<void> enable_code_mode(mcp::ToolRegistry& tools, McpSessionOptions& sessions, const CodeModeOptions& options) {
  if (!options.pool) return Error{ErrorCode::invalid_argument, "code mode needs an engine pool"};
  if (auto ok = engine::validate(options.limits); !ok) return ok;
  if (options.approval_timeout.count() < 1) {
    return Error{ErrorCode::invalid_argument, "approval_timeout must be at least 1 ms"};
  }
  if (options.settled_kept == 0) return Error{ErrorCode::invalid_argument, "settled_kept must be at least 1"};
  auto handler = [](bool resume) {
    return [resume](std::shared_ptr<mcp::ToolContext> ctx) {
      auto call = std::dynamic_pointer_cast<McpSession::CallContext>(ctx);
      if (!call && run_modern_code(ctx, resume)) return;
      if (!call || !call->code()) {
        return ctx->finish(mcp::ToolResult::error("code mode is not enabled in this session"));
      }
      if (resume) return call->code()->resume(call);
      call->code()->execute(call);
    };
  };
  mcp::ToolSpec execute;
  execute.name = "execute";
  execute.title = "Run code against the tools";
  execute.description =
      "Runs JavaScript (or TypeScript) in a sandbox. Call tools as `await tools.<path>(args)`; find them with "
      "`tools.search({query})` and read a tool's input schema with `tools.describe.tool({path})`. "
      "`tools.storage.get/put/delete/list({key, value?, prefix?})` keep JSON values for later executions in "
      "this session. `console.log` output is returned with the result; `emit(value)` shows a value to the user. "
      "Return the result. No network or filesystem. A tool that needs the user's approval may pause the "
      "execution: the result then says waiting_for_interaction, and `resume` continues it.";
  execute.input_schema =
      R"({"type":"object","properties":{"code":{"type":"string","minLength":1,"description":"The body of an async function: await tools, then return the result."}},"required":["code"],"additionalProperties":false})";
  execute.exposure = mcp::Exposure::clients;
  execute.handler = handler(false);
  if (auto ok = tools.add(std::move(execute)); !ok) return ok;
  mcp::ToolSpec resume;
  resume.name = "resume";
  resume.title = "Continue a paused execution";
  resume.description =
      "Continues an execution that execute left waiting_for_interaction, with the user's answer: accept runs "
      "the tool it paused at, decline or cancel make that call fail (the code may catch it). Returns the next "
      "outcome: the result, an error, or another pause.";
  resume.input_schema =
      R"({"type":"object","properties":{"executionId":{"type":"string","minLength":1},"action":{"type":"string","enum":["accept","decline","cancel"]},"content":{"type":"string","default":"{}","description":"The user's answer as a JSON object, as a string."}},"required":["executionId","action"],"additionalProperties":false})";
  resume.exposure = mcp::Exposure::clients;
  resume.handler = handler(true);
  if (auto ok = tools.add(std::move(resume)); !ok) return ok;
  sessions.code_mode = &options;
  return {};
}

}  // namespace dorm::actors
