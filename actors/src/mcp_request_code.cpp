// `execute` in a request of MCP 2026-07-28 (dorm/actors/mcp_request.hpp, "Code mode").
//
// The request object runs the code in the engine (engine::Pool) as its call's work; each
// `tools.<path>(args)` runs the registered tool as a turn of this object, or a built-in
// (code_builtins.hpp). A tool that needs a person's approval cannot pause into a session
// here: once nothing else runs, the round ends with `input_required`, one
// `elicitation/create` per waiting call (key "approval-<seq>"), and the execution is
// stored as its engine journal under this object's keys. The isolate goes. The client's
// retry (same params, the answers, the requestState) replays the journal in a fresh
// isolate — no tool runs twice, the code sees the same time, randomness and results —
// and then delivers each answer: accept runs the tool, anything else rejects the code's
// promise. A tool called by code that asks the client itself asks through the round too
// (key "t<seq>-<its key>") and runs again from its start on the retry, as any tool of this
// revision does. The record and the journal are in the store: the retry works after a
// SIGKILL or a redeploy, on any process that opens it.
//
// Keys (besides the request's own, mcp_request_internal.hpp):
//   x/n      how many journal chunks the stored execution has (decimal)
//   x/j/<n>  the journal, in the engine's encoding, in chunks of at most kChunkBytes
//   c/<key>  tools.storage.* for the code: the request's, gone when it is answered
#include <rapidjson/document.h>

#include <atomic>
#include <functional>
#include <vector>

#include "code_builtins.hpp"
#include "dorm/actors/code_mode.hpp"
#include "dorm/engine/journal.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/engine/wire.hpp"
#include "dorm/mcp/execution_outcome.hpp"
#include "mcp_request_internal.hpp"
#include "modern_code.hpp"
#include "start_hold.hpp"
#include "tool_step.hpp"

namespace dorm::actors {

using namespace request_internal;

namespace request_internal {

namespace {

constexpr std::string_view kChunkCount = "x/n";
constexpr std::string_view kChunkPrefix = "x/j/";
constexpr std::string_view kCodeData = "c/";
// Journal chunks stay well under the storage value limit (128 KiB by default).
constexpr std::size_t kChunkBytes = 64 * 1024;

std::string chunk_key(std::uint32_t n) { return std::string(kChunkPrefix) + std::to_string(n); }
std::string approval_key(std::uint32_t seq) { return "approval-" + std::to_string(seq); }

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

std::string approval_form(const engine::ToolCallEntry& call) {
  std::string message = "Approve calling " + call.path + " with " + call.args_json + "?";
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("mode");
  w.String("form");
  w.Key("message");
  w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  w.Key("requestedSchema");
  w.RawValue(code_builtins::kApprovalSchema.data(), code_builtins::kApprovalSchema.size(), rapidjson::kObjectType);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string trimmed_code(const std::string& arguments) {
  rapidjson::Document args;
  args.Parse(arguments.c_str());
  const rapidjson::Value* code = args.HasParseError() ? nullptr : member(args, "code");
  std::string text = code && code->IsString() ? std::string(code->GetString(), code->GetStringLength()) : "";
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

class McpRequest::CodeRun : public std::enable_shared_from_this<CodeRun> {
 public:
  CodeRun(McpRequest& object, std::shared_ptr<Call> call, const CodeModeOptions& options)
      : object_(object), call_(std::move(call)), options_(options), ended_(std::make_shared<std::atomic<bool>>(false)) {}
  ~CodeRun() { stop(); }

  void start(std::string code);

 private:
  class Observer;
  class Nested;
  class Store;

  // Runs `step` as a piece of the call's work: the call then sees whether it asked
  // something (the round ends) or finished.
  void step(const std::function<void()>& fn) {
    if (ended_->load() || call_->finished()) return stop();
    call_->run(fn);
  }
  void on_tool_call(const engine::ToolCallEntry& call);
  void run_tool(const engine::ToolCallEntry& call, const mcp::ToolRegistry::Entry& entry);
  void deliver(std::uint32_t seq, bool ok, std::string value) {
    if (!ended_->load()) exec_->deliver_tool_result(seq, ok, std::move(value));
  }
  // Once nothing runs: the calls waiting for approval ask the client (ending the round).
  void maybe_ask();
  // The round ends with questions: the approvals still waiting ask too, the journal is
  // stored for the retry, and the isolate goes.
  void round_over();
  void settle(mcp::ToolResult result);
  void on_failed(engine::FailureKind kind, const std::string& message);
  void stop() {
    if (ended_->exchange(true)) return;
    if (exec_) exec_->cancel();  // its `cancelled` report finds it ended and is dropped
    if (held_) {
      held_ = false;
      call_->release();
    }
  }
  void write_journal(const engine::Journal& journal);
  std::optional<engine::Journal> read_journal();

  McpRequest& object_;
  std::shared_ptr<Call> call_;
  const CodeModeOptions& options_;
  std::string id_;
  std::shared_ptr<engine::Execution> exec_;
  // Set on the object's thread; the engine's observer reads it on the pool's thread to
  // drop reports of an execution that already ended.
  std::shared_ptr<std::atomic<bool>> ended_;
  bool held_ = false;
  std::vector<std::string> emitted_;
  std::vector<std::string> logs_;
  std::size_t busy_ = 0;  // tools running for the code
  std::map<std::uint32_t, engine::ToolCallEntry> awaiting_;  // calls waiting for approval
};

// Engine callbacks arrive on the pool's thread; each becomes a turn of the object. A post
// that outlives the activation is dropped (Inbox), and one that outlives the run too.
// Callbacks made inside Pool::start on the object's own thread are held (start_hold.hpp)
// and run at the end of CodeRun::start, as the session does.
class McpRequest::CodeRun::Observer : public engine::ExecutionObserver {
 public:
  using Held = std::function<void(CodeRun&)>;
  Observer(Inbox inbox, std::weak_ptr<CodeRun> run, std::shared_ptr<std::atomic<bool>> ended)
      : inbox_(std::move(inbox)), run_(std::move(run)), ended_(std::move(ended)) {}

  StartHold<Held> start_hold;

  void on_tool_call(const engine::ToolCallEntry& call) override {
    post([call](CodeRun& run) { run.on_tool_call(call); });
  }
  void on_log(engine::wire::LogLevel level, std::string_view text) override {
    post([line = engine::format_log_line(level, text)](CodeRun& run) { run.logs_.push_back(line); });
  }
  void on_emit(std::string_view value_json) override {
    post([value = std::string(value_json)](CodeRun& run) { run.emitted_.push_back(value); });
  }
  void on_completed(std::string_view result_json) override {
    post([result = std::string(result_json)](CodeRun& run) {
      mcp::ExecutionOutcome outcome;
      outcome.status = mcp::ExecutionOutcome::Status::completed;
      if (result != "null") outcome.result_json = result;  // undefined comes as null: no result
      outcome.emitted_json = run.emitted_;
      outcome.logs = run.logs_;
      run.settle(mcp::format_execution_outcome(outcome));
    });
  }
  void on_failed(engine::FailureKind kind, std::string_view message) override {
    post([kind, message = std::string(message)](CodeRun& run) { run.on_failed(kind, message); });
  }

 private:
  template <class F>
  void post(F fn) {
    if (ended_->load()) return;
    if (start_hold.holding()) return start_hold.keep(std::move(fn));
    inbox_.post([weak = run_, fn = std::move(fn)] {
      auto run = weak.lock();
      if (!run) return;
      run->step([&] { fn(*run); });
    });
  }
  Inbox inbox_;
  std::weak_ptr<CodeRun> run_;
  std::shared_ptr<std::atomic<bool>> ended_;
};

// tools.storage.* of a request's code: JSON values under its c/<key> keys.
class McpRequest::CodeRun::Store : public code_builtins::Store {
 public:
  explicit Store(McpRequest& object) : object_(object) {}
  Result<std::optional<std::string>> get(std::string_view key) override { return object_.get(key_of(key)); }
  Result<void> put(std::string_view key, std::string_view value) override { return object_.put(key_of(key), value); }
  Result<bool> del(std::string_view key) override { return object_.del(key_of(key)); }
  Result<std::vector<std::pair<std::string, std::string>>> list(std::string_view prefix, std::size_t limit) override {
    ListOptions options;
    options.prefix = key_of(prefix);
    options.limit = limit;
    auto listed = object_.list(options);
    if (!listed) return std::move(listed).error();
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& kv : *listed) out.emplace_back(kv.key.substr(kCodeData.size()), std::move(kv.value));
    return out;
  }

 private:
  static std::string key_of(std::string_view key) { return std::string(kCodeData) + std::string(key); }
  McpRequest& object_;
};

// The ToolContext of a tool that code called: its arguments, the request's tool storage,
// the request's logging; its questions go into the round under "t<seq>-<key>". No
// progress (code calls carry no token).
class McpRequest::CodeRun::Nested : public mcp::ToolContext, public std::enable_shared_from_this<Nested> {
 public:
  using Done = std::function<void(const mcp::ToolResult&)>;
  Nested(McpRequest& object, std::shared_ptr<Call> call, std::uint32_t seq, std::string arguments, Done done)
      : object_(object),
        inbox_(object.inbox()),
        call_(std::move(call)),
        seq_(seq),
        arguments_(std::move(arguments)),
        done_(std::move(done)) {}

  const std::string& arguments() const override { return arguments_; }
  mcp::ToolStorage& storage() override { return *object_.storage_; }
  bool wants_progress() const override { return false; }
  void progress(double, std::optional<double>, std::string_view) override {}
  void log(std::string_view level, std::string_view data_json) override {
    if (!finished_) call_->log(level, data_json);
  }
  void after(std::chrono::milliseconds delay, std::function<void()> then) override {
    object_.after(delay, [self = shared_from_this(), then = std::move(then)] { self->step(then); });
  }
  void post(std::function<void()> then) override {
    inbox_.post([self = shared_from_this(), then = std::move(then)] { self->step(then); });
  }
  void close_connection() override {}
  void notify_session(std::string_view method, std::string_view params_json) override {
    if (!finished_) call_->notify_session(method, params_json);
  }
  void resource_updated(std::string_view uri) override {
    if (!finished_) call_->resource_updated(uri);
  }
  Result<void> request(std::string_view method, std::string_view params_json,
                       mcp::ClientReplyHandler on_reply) override {
    return ask("input-" + std::to_string(++unnamed_), method, params_json, std::move(on_reply));
  }
  Result<void> ask(std::string_view key, std::string_view method, std::string_view params_json,
                   mcp::ClientReplyHandler on_reply) override {
    if (finished_) return Error{ErrorCode::invalid_argument, "the call is finished: it cannot ask the client"};
    return call_->ask("t" + std::to_string(seq_) + "-" + std::string(key), method, params_json,
                      [self = shared_from_this(), on_reply = std::move(on_reply)](const mcp::ClientReply& reply) {
                        self->run([&] { on_reply(reply); });
                      });
  }
  void fail(int, std::string_view message) override { finish(mcp::ToolResult::error(std::string(message))); }
  void finish(mcp::ToolResult result) override {
    if (finished_) return;
    finished_ = true;
    done_(result);
  }
  bool finished() const override { return finished_; }

  // A throw finishes this tool with an error result, except a failure of the store, which
  // fails the turn.
  void run(const std::function<void()>& fn) {
    if (!finished_) run_tool_step(fn, [this](mcp::ToolResult r) { finish(std::move(r)); });
  }

 private:
  // A later piece of the tool, as a piece of the call's work.
  void step(const std::function<void()>& fn) {
    if (finished_ || call_->finished()) return;
    call_->run([&] { run(fn); });
  }

  McpRequest& object_;
  Inbox inbox_;
  std::shared_ptr<Call> call_;
  std::uint32_t seq_;
  std::string arguments_;
  Done done_;
  int unnamed_ = 0;
  bool finished_ = false;
};

void McpRequest::CodeRun::start(std::string code) {
  id_ = "exec_" + random_hex(8);
  std::optional<engine::Journal> journal = read_journal();
  engine::OpenEffects open;
  if (journal) open = engine::open_effects(*journal);
  auto observer = std::make_shared<Observer>(object_.inbox(), weak_from_this(), ended_);
  const bool replay = journal.has_value();
  observer->start_hold.hold();
  auto exec = options_.pool->start(engine::ExecutionRequest{id_, std::move(code), options_.limits, std::move(journal)},
                                   observer);
  auto held = observer->start_hold.release();
  if (!exec) {
    ended_->store(true);
    mcp::ExecutionOutcome outcome;
    outcome.status = mcp::ExecutionOutcome::Status::error;
    outcome.error = "engine_overloaded: " + exec.error().message;
    return call_->finish(mcp::format_execution_outcome(outcome));
  }
  exec_ = std::move(exec).value();
  held_ = true;
  call_->hold();
  call_->before_input_required = [weak = weak_from_this()] {
    if (auto run = weak.lock()) run->round_over();
  };
  log::debug("modern_execution_started", {{"execution", id_}, {"replay", replay ? "true" : "false"}});
  // The calls the journal left open were made before the last round ended and never
  // answered: the replayed code does not make them again, so they are answered now.
  for (const auto& call : open.calls) {
    if (ended_->load()) break;
    on_tool_call(call);
  }
  for (auto& fn : held) step([&] { fn(*this); });
}

void McpRequest::CodeRun::on_tool_call(const engine::ToolCallEntry& call) {
  if (ended_->load()) return;
  const mcp::ToolRegistry& tools = *object_.server_.tools;
  if (code_builtins::is_builtin(call.path)) {
    Store store(object_);
    auto [ok, value] = code_builtins::answer(tools, store, call.path, call.args_json);
    return deliver(call.seq, ok, std::move(value));
  }
  const mcp::ToolRegistry::Entry* entry = tools.find(call.path, mcp::Exposure::code);
  if (!entry) {
    return deliver(call.seq, false, "unknown tool: " + call.path + " (find tools with tools.search({query}))");
  }
  if (auto valid = tools.validate_arguments(*entry, call.args_json); !valid) {
    return deliver(call.seq, false, call.path + ": " + valid.error().message);
  }
  if (!tools.spec(*entry).requires_approval) return run_tool(call, *entry);
  // Answered in an earlier round (or this retry): the person's answer decides.
  const auto& answers = call_->answers();
  auto answer = answers.find(approval_key(call.seq));
  if (answer == answers.end()) {
    awaiting_.emplace(call.seq, call);
    return maybe_ask();
  }
  rapidjson::Document reply;
  reply.Parse(answer->second.c_str());
  const rapidjson::Value* action = reply.HasParseError() ? nullptr : member(reply, "action");
  std::string a = action && action->IsString() ? action->GetString() : "cancel";
  if (a == "accept") return run_tool(call, *entry);
  deliver(call.seq, false, "the user " + std::string(a == "decline" ? "declined" : "cancelled") + " tools." + call.path);
}

void McpRequest::CodeRun::run_tool(const engine::ToolCallEntry& call, const mcp::ToolRegistry::Entry& entry) {
  ++busy_;
  std::weak_ptr<CodeRun> weak = weak_from_this();
  auto context = std::make_shared<Nested>(
      object_, call_, call.seq, call.args_json, [this, weak, seq = call.seq, &entry](const mcp::ToolResult& result) {
        if (weak.expired() || ended_->load()) return;
        --busy_;
        if (auto fits = object_.server_.tools->check_structured(entry, result); !fits) {
          log::error("tool_output_schema_mismatch", {{"execution", id_}, {"error", fits.error().message}});
          deliver(seq, false, fits.error().message);
        } else {
          auto [ok, value] = code_builtins::value_for_code(result);
          deliver(seq, ok, std::move(value));
        }
        maybe_ask();
      });
  const auto& handler = object_.server_.tools->spec(entry).handler;
  context->run([&] { handler(context); });
}

void McpRequest::CodeRun::maybe_ask() {
  if (ended_->load() || busy_ > 0 || awaiting_.empty()) return;
  // Pauses only once nothing else runs: the journal then holds every result the code has
  // seen, and no tool's work is cut short.
  auto waiting = std::move(awaiting_);
  awaiting_.clear();
  for (const auto& [seq, call] : waiting) {
    auto asked = call_->ask(approval_key(seq), "elicitation/create", approval_form(call), [](const mcp::ClientReply&) {});
    if (!asked) {
      // The client cannot be asked (it declared no elicitation): the code's call fails;
      // a run that then fails is answered -32021 naming the capability.
      deliver(seq, false, "tools." + call.path + " needs the user's approval, and " + asked.error().message);
    }
  }
}

void McpRequest::CodeRun::round_over() {
  if (ended_->load()) return;
  for (const auto& [seq, call] : awaiting_) {
    // Not answered, not asked yet (a tool's own question ends this round first): asked now.
    (void)call_->ask(approval_key(seq), "elicitation/create", approval_form(call), [](const mcp::ClientReply&) {});
  }
  awaiting_.clear();
  write_journal(exec_->journal());
  log::info("modern_execution_paused", {{"execution", id_}});
  stop();
}

void McpRequest::CodeRun::settle(mcp::ToolResult result) {
  stop();
  call_->finish(std::move(result));
}

void McpRequest::CodeRun::on_failed(engine::FailureKind kind, const std::string& message) {
  if (kind == engine::FailureKind::engine_crashed || kind == engine::FailureKind::engine_overloaded) {
    // Not the code's fault: the client gets a correlation id, the log the cause.
    std::string correlation = random_hex(4);
    log::error("execution_engine_failed", {{"execution", id_},
                                           {"kind", std::string(engine::to_string(kind))},
                                           {"error", message},
                                           {"correlation", correlation}});
    return settle(mcp::format_internal_error(correlation));
  }
  mcp::ExecutionOutcome outcome;
  outcome.status = mcp::ExecutionOutcome::Status::error;
  outcome.error = message;
  outcome.emitted_json = emitted_;
  outcome.logs = logs_;
  settle(mcp::format_execution_outcome(outcome));
}

void McpRequest::CodeRun::write_journal(const engine::Journal& journal) {
  if (auto old = object_.get(kChunkCount).value_or_throw()) {
    for (std::uint32_t n = 0; n < std::stoul(*old); ++n) object_.del(chunk_key(n)).value_or_throw();
  }
  std::string bytes;
  engine::wire::encode_journal(journal, bytes);
  std::uint32_t chunks = 0;
  for (std::size_t at = 0; at < bytes.size(); at += kChunkBytes) {
    object_.put(chunk_key(chunks++), std::string_view(bytes).substr(at, kChunkBytes)).value_or_throw();
  }
  object_.put(kChunkCount, std::to_string(chunks)).value_or_throw();
}

std::optional<engine::Journal> McpRequest::CodeRun::read_journal() {
  auto count = object_.get(kChunkCount).value_or_throw();
  if (!count) return std::nullopt;
  std::string bytes;
  for (std::uint32_t n = 0; n < std::stoul(*count); ++n) {
    auto chunk = object_.get(chunk_key(n)).value_or_throw();
    if (!chunk) throw ErrorException(Error{ErrorCode::corruption, "stored execution: journal chunk " + std::to_string(n) + " missing"});
    bytes += *chunk;
  }
  auto journal = engine::wire::decode_journal(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  if (!journal) throw ErrorException(Error{ErrorCode::corruption, "stored execution: " + journal.error().message});
  return std::move(journal).value();
}

void McpRequest::run_code(const std::shared_ptr<Call>& call) {
  if (!options_.code_mode) return call->finish(mcp::ToolResult::error("code mode is not enabled on this server"));
  std::string code = trimmed_code(call->arguments());
  if (code.empty()) return call->finish(mcp::ToolResult::error("code must not be empty"));
  code_run_ = std::make_shared<CodeRun>(*this, call, *options_.code_mode);
  code_run_->start(std::move(code));
}

}  // namespace request_internal

bool run_modern_code(const std::shared_ptr<mcp::ToolContext>& context, bool resume) {
  auto call = std::dynamic_pointer_cast<McpRequest::Call>(context);
  if (!call) return false;
  if (resume) {
    call->finish(mcp::ToolResult::error(
        "resume continues executions paused in a 2025-11-25 session; in MCP 2026-07-28 an execution that "
        "waits for approval answers input_required: send the same execute request again with the answers in "
        "inputResponses and its requestState"));
    return true;
  }
  call->object().run_code(call);
  return true;
}

}  // namespace dorm::actors
