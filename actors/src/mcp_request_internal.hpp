// What the request objects of MCP 2026-07-28 share (mcp_request.cpp: requests and their
// input_required rounds; mcp_request_tasks.cpp: the Tasks extension): the object, the
// context its tools see, the durable records and small helpers. Internal to actors/src.
#pragma once

#include <caf/all.hpp>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

#include "dorm/actors/mcp_request.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/sse_data.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors::request_internal {

using mcp::HttpResponse;
using mcp::Message;
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

inline constexpr const char* kRecordKey = "r";
inline constexpr std::string_view kToolData = "t/";
inline constexpr std::array<std::string_view, 8> kLogLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

inline int log_rank(std::string_view level) {
  for (std::size_t i = 0; i < kLogLevels.size(); ++i) {
    if (kLogLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

inline const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  return obj.IsObject() && obj.HasMember(key) ? &obj[key] : nullptr;
}

inline std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  value.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

inline std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

// What a retry must repeat: the method and its params without the round's own members.
inline std::string params_digest(std::string_view method, const rapidjson::Document& params) {
  rapidjson::Document copy;
  copy.CopyFrom(params, copy.GetAllocator());
  for (const char* own : {"_meta", "inputResponses", "requestState"}) copy.RemoveMember(own);
  return sha256_hex(std::string(method) + "\n" + compact(copy));
}

// Whether `answer` is the kind of result `method` asks for (MCP 2026-07-28: ElicitResult,
// CreateMessageResult, ListRootsResult); the message says what is wrong when it is not.
inline std::optional<std::string> misfit(std::string_view method, const rapidjson::Value& answer) {
  if (!answer.IsObject()) return "is not an object";
  if (method == "elicitation/create") {
    const rapidjson::Value* action = member(answer, "action");
    if (!action || !action->IsString()) return "has no action (accept, decline or cancel)";
    std::string_view a(action->GetString(), action->GetStringLength());
    if (a != "accept" && a != "decline" && a != "cancel") return "has an action other than accept, decline or cancel";
    if (const rapidjson::Value* content = member(answer, "content"); content && !content->IsObject()) {
      return "has content that is not an object";
    }
  } else if (method == "sampling/createMessage") {
    const rapidjson::Value* role = member(answer, "role");
    const rapidjson::Value* content = member(answer, "content");
    if (!role || !role->IsString() || !content || !(content->IsObject() || content->IsArray())) {
      return "is not a CreateMessageResult (role and content)";
    }
  } else if (method == "roots/list") {
    const rapidjson::Value* roots = member(answer, "roots");
    if (!roots || !roots->IsArray()) return "is not a ListRootsResult (roots, an array)";
  }
  return std::nullopt;
}

inline bool is_error(const mcp::ToolResult& result) {
  rapidjson::Document doc;
  doc.Parse(result.json.c_str());
  const rapidjson::Value* flag = doc.HasParseError() ? nullptr : member(doc, "isError");
  return flag && flag->IsBool() && flag->GetBool();
}

inline bool valid_key(std::string_view key) {
  if (key.empty() || key.size() > 64) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// An entry of inputRequests: {"method":METHOD,"params":PARAMS} (params {} when empty).
inline std::string question_json(std::string_view method, std::string_view params_json) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("method");
  w.String(method.data(), static_cast<rapidjson::SizeType>(method.size()));
  w.Key("params");
  if (params_json.empty()) params_json = "{}";
  w.RawValue(params_json.data(), params_json.size(), rapidjson::kObjectType);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

inline std::string sse_message(std::string_view message) {
  std::string out = "event: message\n";
  mcp::append_sse_data(out, message);
  out += '\n';
  return out;
}

// The durable record of a request waiting for input.

// The durable record of a request waiting for input (key kRecordKey).
struct Record {
  std::uint32_t round = 0;
  mcp::Identity owner;
  std::string method;
  std::string digest;  // params_digest
  std::map<std::string, std::string> answers;  // key -> the client's answer (JSON)
  std::map<std::string, std::string> asked;    // key -> {"method":…,"params":…}

  std::string to_json() const {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    auto str = [&w](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
    w.StartObject();
    w.Key("round");
    w.Uint(round);
    w.Key("user");
    str(owner.user);
    w.Key("org");
    str(owner.org);
    w.Key("method");
    str(method);
    w.Key("digest");
    str(digest);
    for (const auto* map : {&answers, &asked}) {
      w.Key(map == &answers ? "answers" : "asked");
      w.StartObject();
      for (const auto& [k, v] : *map) {
        str(k);
        w.RawValue(v.data(), v.size(), rapidjson::kObjectType);
      }
      w.EndObject();
    }
    w.EndObject();
    return std::string(buffer.GetString(), buffer.GetSize());
  }

  // The record this object wrote, or a throw (a record we cannot read is a defect or a
  // damaged store: the turn fails, and nothing is resumed).
  static Record from_json(std::string_view text) {
    rapidjson::Document doc;
    doc.Parse(text.data(), text.size());
    auto text_of = [&doc](const char* key) {
      const rapidjson::Value* v = member(doc, key);
      if (!v || !v->IsString()) throw std::runtime_error(std::string("request record without ") + key);
      return std::string(v->GetString(), v->GetStringLength());
    };
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("round") || !doc["round"].IsUint()) {
      throw std::runtime_error("request record is not readable");
    }
    Record r;
    r.round = doc["round"].GetUint();
    r.owner = mcp::Identity{text_of("user"), text_of("org")};
    r.method = text_of("method");
    r.digest = text_of("digest");
    for (auto* map : {&r.answers, &r.asked}) {
      const rapidjson::Value* obj = member(doc, map == &r.answers ? "answers" : "asked");
      if (!obj || !obj->IsObject()) throw std::runtime_error("request record without its maps");
      for (auto it = obj->MemberBegin(); it != obj->MemberEnd(); ++it) {
        (*map)[std::string(it->name.GetString(), it->name.GetStringLength())] = compact(it->value);
      }
    }
    return r;
  }
};


// The durable record of a task (key kTaskKey): what tasks/get answers, and what a re-run
// after tasks/update needs.
inline constexpr const char* kTaskKey = "k";
// The runtime index of tasks whose work is running: <task id> -> "". At boot every task
// it names is woken, so one whose work died with the process is failed at once.
inline constexpr std::string_view kTaskIndex = "mcp.tasks";
struct TaskRecord {
  std::string id;
  std::string status;  // working, input_required, completed, failed, cancelled
  std::string status_message;
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
  std::int64_t ttl_ms = 0;
  mcp::Identity owner;
  std::string params;        // the tools/call's params without _meta and the round's members
  std::string capabilities;  // the creating request's clientCapabilities
  std::string result;        // completed: the CallToolResult
  std::string error;         // failed: the JSON-RPC error object
  std::map<std::string, std::string> asked;    // input_required: the questions open
  std::map<std::string, std::string> answers;  // every answer so far
  Epoch runner;  // the activation running its work (status working)

  bool terminal() const { return status == "completed" || status == "failed" || status == "cancelled"; }
  std::string to_json() const;
  static TaskRecord from_json(std::string_view text);
};

// How a Call was started: what of its request it needs after the request is answered.
struct CallSetup {
  std::string capabilities;    // clientCapabilities it may ask by
  std::string progress_token;  // empty: no progress wanted
  std::string log_level;       // empty: no log messages
  std::optional<mcp::RequestId> id;
  std::shared_ptr<mcp::Responder> responder;  // null for a task's re-run
  bool task_eligible = false;  // the tool may become a task and the request declared the extension
  bool task = false;           // already a task (a re-run after tasks/update)
};

class McpRequest : public DurableObject {
 public:
  explicit McpRequest(const McpRequestOptions& options) : options_(options), server_(*options.server) {}

  caf::behavior behavior() override;
  // A task whose work was running in an activation that is gone is failed here, before
  // anything else reaches it (the reaper's error: server_restart, retrySafe false).
  void on_start(StartReason reason) override;
  // A requestState or a task nobody came back for in time: everything goes, and so does
  // the object.
  void on_alarm(const AlarmInfo&) override;

  class Call;
  class Storage;
  class CodeRun;
  // `execute` in this request (mcp_request_code.cpp): runs `call`'s code, replaying the
  // execution stored by an earlier round.
  void run_code(const std::shared_ptr<Call>& call);

 private:
  friend class Call;
  friend class CodeRun;
  void handle(mcp::ModernCall call);
  // Answers `responder` with `message` (a JSON-RPC response) at `status` once the turn
  // commits.
  void answer(const std::shared_ptr<mcp::Responder>& responder, int status, std::string message);
  // answer(), then erases everything and leaves memory.
  void conclude(int status, std::string message);
  void call_tool(const rapidjson::Document& params, std::map<std::string, std::string> answers,
                 std::uint32_t round);
  void read_or_get(const rapidjson::Document& params, std::map<std::string, std::string> answers,
                   std::uint32_t round);
  // Ends a round: stores the record of what was asked (`asked`: key -> {"method","params"})
  // and answered so far, arms its expiry, and returns the input_required response.
  std::string issue_state(const std::map<std::string, std::string>& asked,
                          const std::map<std::string, std::string>& answers, std::uint32_t round);
  // The -32021 response naming `missing`, for request `id`.
  std::string missing_capability(const std::optional<mcp::RequestId>& id,
                                 const std::vector<std::string>& missing) const;
  std::string wrap(std::string_view result_json, std::string_view type,
                   std::optional<mcp::CacheHints> hints = std::nullopt) const {
    return mcp::modern_result(result_json, server_, type, hints);
  }

  // ---- tasks (mcp_request_tasks.cpp) ----
  // The call's first turn ended with its tool still working: it becomes task call_.handle
  // (record, index entry, TTL alarm) and the request is answered with CreateTaskResult.
  void become_task(Call& call);
  // Where a task's work ended: the record takes its outcome (status, result or error, or
  // the questions it asks), and the object leaves memory.
  void task_settled(const std::string& status, std::string result, std::string error,
                    std::map<std::string, std::string> asked, std::map<std::string, std::string> answers);
  // tasks/get, tasks/update, tasks/cancel.
  void task_request(const mcp::ModernCall& call);
  std::optional<TaskRecord> load_task();
  void save_task(TaskRecord& task);
  // Runs the task's tool again from the start with every answer so far (after tasks/update
  // answered its last question).
  void rerun_task(const TaskRecord& task);
  // tasks/get's answer: the DetailedTask (detailed_task) as a result of this revision.
  std::string detailed(const TaskRecord& task) const;
  // The DetailedTask: the task, and its result, error or open questions by status.
  std::string detailed_task(const TaskRecord& task) const;
  // The members every task object has: taskId, status, statusMessage, the times, the TTL
  // and the poll interval.
  void write_task(JsonWriter& w, const TaskRecord& task) const;

  const McpRequestOptions& options_;
  const mcp::ModernServer& server_;
  mcp::ModernCall call_;  // the tools/call, prompts/get or resources/read being served
  std::string digest_;
  std::shared_ptr<Call> running_;
  std::unique_ptr<Storage> storage_;
  std::optional<TaskRecord> task_;  // this object's task, once loaded or made
  // The execution `execute` runs in this activation; its isolate goes with the object.
  std::shared_ptr<CodeRun> code_run_;
};

class McpRequest::Storage : public mcp::ToolStorage {
 public:
  explicit Storage(McpRequest& object) : object_(object) {}
  Result<std::optional<std::string>> get(std::string_view key) override { return object_.get(prefixed(key)); }
  Result<void> put(std::string_view key, std::string_view value) override {
    return object_.put(prefixed(key), value);
  }
  Result<bool> del(std::string_view key) override { return object_.del(prefixed(key)); }

 private:
  static std::string prefixed(std::string_view key) { return std::string(kToolData) + std::string(key); }
  McpRequest& object_;
};

// One tools/call of the modern era, as its tool sees it. Until its first turn ends it
// answers its HTTP request (a result, input_required, or a stream once it emits and runs
// on); a call that becomes a task answers through the task's record instead.
class McpRequest::Call : public mcp::ToolContext, public std::enable_shared_from_this<Call> {
 public:
  Call(McpRequest& object, const mcp::ToolRegistry::Entry& tool, std::string arguments,
       std::map<std::string, std::string> answers, std::uint32_t round, CallSetup setup)
      : object_(object),
        inbox_(object.inbox()),
        tool_(tool),
        arguments_(std::move(arguments)),
        answers_(std::move(answers)),
        round_(round),
        setup_(std::move(setup)),
        lease_(object.keep_alive()),
        task_(setup_.task) {}

  const std::string& arguments() const override { return arguments_; }
  mcp::ToolStorage& storage() override { return *object_.storage_; }
  bool wants_progress() const override { return !setup_.progress_token.empty() && !task_; }
  void progress(double progress, std::optional<double> total, std::string_view message) override;
  // Only with the request's own logLevel (MCP 2026-07-28: no level, no messages).
  void log(std::string_view level, std::string_view data_json) override;
  void after(std::chrono::milliseconds delay, std::function<void()> then) override;
  void post(std::function<void()> then) override;
  // A modern response stream cannot be resumed: there is nothing to close early.
  void close_connection() override {}
  // The revision has no session stream: list changes and resource updates go to the
  // subscriptions/listen streams that asked for them (ListenHub), once this turn commits.
  // Any other notification has nowhere to go in this era, and is logged so a tool author
  // sees where it went.
  void notify_session(std::string_view method, std::string_view) override;
  void resource_updated(std::string_view uri) override;
  Result<void> request(std::string_view method, std::string_view params_json,
                       mcp::ClientReplyHandler on_reply) override {
    return ask("input-" + std::to_string(++unnamed_), method, params_json, std::move(on_reply));
  }
  Result<void> ask(std::string_view key, std::string_view method, std::string_view params_json,
                   mcp::ClientReplyHandler on_reply) override;
  void fail(int code, std::string_view message) override;
  void finish(mcp::ToolResult result) override;
  bool finished() const override { return finished_; }

  // Runs a piece of the handler, then looks at where the call stands: a throw finishes
  // it with an error result (a failure of the store fails the turn); questions nobody
  // answered yet end the round (input_required); a call with nothing left to wait for
  // that was refused something the client cannot do is answered -32021.
  void run(const std::function<void()>& step);
  // The end of the call's first turn: a call still working becomes a task if it may, and
  // its response becomes a stream once it has emitted something (what was emitted so far
  // goes first, the rest as it comes); a call that emits nothing is answered with plain
  // JSON whenever it finishes.
  void first_turn_over();
  // tasks/cancel, or the task's TTL: the work stops and nothing more is recorded.
  void stop() {
    finished_ = true;
    lease_.release();
  }
  bool is_task() const { return task_; }
  const std::map<std::string, std::string>& answers() const { return answers_; }
  McpRequest& object() const { return object_; }
  // Work outside the handler's posts and timers (an execution in the engine) that may
  // still call back: while held, the call is not over for want of a capability.
  void hold() { ++waiting_; }
  void release() { --waiting_; }
  // Runs as the round ends with questions, before its record is stored: the last chance
  // to add questions (ask) and to store what a retry needs.
  std::function<void()> before_input_required;
  const CallSetup& setup() const { return setup_; }

 private:
  void open_stream();
  void emit(std::string message);
  // The call's answer: `message` at `status` (when the response has not started; a stream
  // already at 200 carries it as its last event), then the object's end: it keeps its
  // storage (`keep_record`) or erases it.
  void end(int status, std::string message, bool keep_record = false);
  void input_required();
  void missing_capability();

  McpRequest& object_;
  Inbox inbox_;
  const mcp::ToolRegistry::Entry& tool_;
  std::string arguments_;
  std::map<std::string, std::string> answers_;  // from earlier rounds and this retry
  std::uint32_t round_;
  CallSetup setup_;
  Lease lease_;
  bool task_;
  std::map<std::string, std::string> pending_;  // asked in this round, not answered
  std::set<std::string> asked_;                 // every key asked in this run
  std::vector<std::string> missing_;            // capabilities a refused ask needed
  int unnamed_ = 0;
  int waiting_ = 0;  // posts and timers not run yet
  bool finished_ = false;
  bool streaming_ = false;
  bool first_turn_ = true;
  std::string buffered_;  // events of the first turn, framed
  int buffered_count_ = 0;
  caf::actor sink_;
};

}  // namespace dorm::actors::request_internal
