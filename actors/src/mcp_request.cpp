// McpRequest — the durable object behind one request of MCP 2026-07-28 (what it promises:
// dorm/actors/mcp_request.hpp).
#include "dorm/actors/mcp_request.hpp"

#include <caf/all.hpp>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <map>
#include <set>
#include <memory>
#include <stdexcept>

#include "dorm/mcp/feature_methods.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/sse_data.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {
namespace {

using mcp::HttpResponse;
using mcp::Message;
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr const char* kRecordKey = "r";
constexpr std::string_view kToolData = "t/";
constexpr std::array<std::string_view, 8> kLogLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

int log_rank(std::string_view level) {
  for (std::size_t i = 0; i < kLogLevels.size(); ++i) {
    if (kLogLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  return obj.IsObject() && obj.HasMember(key) ? &obj[key] : nullptr;
}

std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  value.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string sha256_hex(std::string_view data) {
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
std::string params_digest(std::string_view method, const rapidjson::Document& params) {
  rapidjson::Document copy;
  copy.CopyFrom(params, copy.GetAllocator());
  for (const char* own : {"_meta", "inputResponses", "requestState"}) copy.RemoveMember(own);
  return sha256_hex(std::string(method) + "\n" + compact(copy));
}

// Whether `answer` is the kind of result `method` asks for (MCP 2026-07-28: ElicitResult,
// CreateMessageResult, ListRootsResult); the message says what is wrong when it is not.
std::optional<std::string> misfit(std::string_view method, const rapidjson::Value& answer) {
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

bool is_error(const mcp::ToolResult& result) {
  rapidjson::Document doc;
  doc.Parse(result.json.c_str());
  const rapidjson::Value* flag = doc.HasParseError() ? nullptr : member(doc, "isError");
  return flag && flag->IsBool() && flag->GetBool();
}

bool valid_key(std::string_view key) {
  if (key.empty() || key.size() > 64) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string sse_message(std::string_view message) {
  std::string out = "event: message\n";
  mcp::append_sse_data(out, message);
  out += '\n';
  return out;
}

// The durable record of a request waiting for input.
struct Record {
  std::uint32_t round = 0;
  std::string secret_digest;  // hex SHA-256 of the round's secret
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
    w.Key("secret");
    str(secret_digest);
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
    r.secret_digest = text_of("secret");
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

class McpRequest : public DurableObject {
 public:
  explicit McpRequest(const McpRequestOptions& options) : options_(options), server_(*options.server) {}

  caf::behavior behavior() override {
    return {[this](mcp::ModernCall& call) { handle(std::move(call)); }};
  }

  // A requestState nobody used in time: the record goes, and so does the object.
  void on_alarm(const AlarmInfo&) override {
    delete_all().value_or_throw();
    dispose_empty();
  }

  class Call;
  class Storage;

 private:
  void handle(mcp::ModernCall call);
  // Answers the call's responder with `message` (a JSON-RPC response) at `status`, then
  // erases everything and leaves memory.
  void conclude(int status, std::string message);
  void call_tool(const rapidjson::Document& params, std::map<std::string, std::string> answers,
                 std::uint32_t round);
  void read_or_get(const rapidjson::Document& params, std::map<std::string, std::string> answers,
                   std::uint32_t round);
  // Ends a round: stores the record of what was asked (`asked`: key -> {"method","params"})
  // and answered so far, arms its expiry, and returns the input_required response.
  std::string issue_state(const std::map<std::string, std::string>& asked,
                          const std::map<std::string, std::string>& answers, std::uint32_t round);
  // The -32021 response naming `missing`.
  std::string missing_capability(const std::vector<std::string>& missing) const;
  std::string wrap(std::string_view result_json, std::string_view type,
                   std::optional<mcp::CacheHints> hints = std::nullopt) const {
    return mcp::modern_result(result_json, server_, type, hints);
  }

  const McpRequestOptions& options_;
  const mcp::ModernServer& server_;
  mcp::ModernCall call_;
  std::string digest_;
  std::shared_ptr<Call> running_;
  std::unique_ptr<Storage> storage_;
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

// One tools/call of the modern era, as its tool sees it.
class McpRequest::Call : public mcp::ToolContext, public std::enable_shared_from_this<Call> {
 public:
  Call(McpRequest& object, const mcp::ToolRegistry::Entry& tool, std::string arguments,
       std::map<std::string, std::string> answers, std::uint32_t round)
      : object_(object),
        inbox_(object.inbox()),
        tool_(tool),
        arguments_(std::move(arguments)),
        answers_(std::move(answers)),
        round_(round),
        lease_(object.keep_alive()) {}

  const std::string& arguments() const override { return arguments_; }
  mcp::ToolStorage& storage() override { return *object_.storage_; }
  bool wants_progress() const override { return !request().progress_token.empty(); }

  void progress(double progress, std::optional<double> total, std::string_view message) override {
    if (finished_ || request().progress_token.empty()) return;
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("progressToken");
    const auto& token = request().progress_token;
    w.RawValue(token.data(), token.size(), rapidjson::kStringType);
    w.Key("progress");
    w.Double(progress);
    if (total) {
      w.Key("total");
      w.Double(*total);
    }
    if (!message.empty()) {
      w.Key("message");
      w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
    }
    w.EndObject();
    emit(mcp::notification("notifications/progress", buffer.GetString()));
  }

  // Only with the request's own logLevel (MCP 2026-07-28: no level, no messages).
  void log(std::string_view level, std::string_view data_json) override {
    const std::string& wanted = request().log_level;
    if (finished_ || wanted.empty()) return;
    int rank = log_rank(level);
    if (rank < 0 || rank < log_rank(wanted)) return;
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("level");
    w.String(level.data(), static_cast<rapidjson::SizeType>(level.size()));
    w.Key("data");
    w.RawValue(data_json.data(), data_json.size(), rapidjson::kObjectType);
    w.EndObject();
    emit(mcp::notification("notifications/message", buffer.GetString()));
  }

  void after(std::chrono::milliseconds delay, std::function<void()> then) override {
    ++waiting_;
    object_.after(delay, [self = shared_from_this(), then = std::move(then)] {
      --self->waiting_;
      if (!self->finished_) self->run(then);
    });
  }

  void post(std::function<void()> then) override {
    ++waiting_;
    inbox_.post([self = shared_from_this(), then = std::move(then)] {
      --self->waiting_;
      if (!self->finished_) self->run(then);
    });
  }

  // A modern response stream cannot be resumed: there is nothing to close early.
  void close_connection() override {}

  // The revision has no session stream; list changes reach clients through
  // subscriptions/listen, which this server does not offer (docs/mcp.md). Logged, so a
  // tool author sees where the notification went.
  void notify_session(std::string_view method, std::string_view) override {
    log::debug("modern_notification_dropped", {{"method", std::string(method)}});
  }

  void resource_updated(std::string_view uri) override {
    log::debug("modern_resource_update_dropped", {{"uri", std::string(uri)}});
  }

  Result<void> request(std::string_view method, std::string_view params_json,
                       mcp::ClientReplyHandler on_reply) override {
    return ask("input-" + std::to_string(++unnamed_), method, params_json, std::move(on_reply));
  }

  Result<void> ask(std::string_view key, std::string_view method, std::string_view params_json,
                   mcp::ClientReplyHandler on_reply) override {
    if (finished_) return Error{ErrorCode::invalid_argument, "the call is finished: it cannot ask the client"};
    if (!valid_key(key)) {
      return Error{ErrorCode::invalid_argument, "an input key is 1 to 64 of [A-Za-z0-9_.-], not \"" +
                                                    std::string(key) + "\""};
    }
    std::string k(key);
    if (pending_.count(k) || asked_.count(k)) {
      return Error{ErrorCode::invalid_argument, "the call already asked under the key " + k};
    }
    auto refusal = mcp::refuse_client_request(method, params_json, request().client_capabilities,
                                              "in this request's _meta");
    if (refusal) {
      if (!refusal->capability.empty()) missing_.push_back(refusal->capability);
      return Error{ErrorCode::invalid_argument, refusal->message};
    }
    if (method == "ping") {
      // Nothing to ask: the client is there, since it is sending this request.
      asked_.insert(k);
      post([on_reply = std::move(on_reply)] { on_reply(mcp::ClientReply{mcp::ClientReply::Kind::result, "{}", {}}); });
      return {};
    }
    asked_.insert(k);
    if (auto answer = answers_.find(k); answer != answers_.end()) {
      rapidjson::Document parsed;
      parsed.Parse(answer->second.c_str());
      if (auto why = misfit(method, parsed)) {
        end(400, mcp::error_response(request().message.id, mcp::kInvalidParams,
                                     "params.inputResponses." + k + " " + *why + " (the answer to " +
                                         std::string(method) + ")"));
        return Error{ErrorCode::invalid_argument, "the client's answer to " + k + " is malformed"};
      }
      post([on_reply = std::move(on_reply), json = answer->second] {
        on_reply(mcp::ClientReply{mcp::ClientReply::Kind::result, json, {}});
      });
      return {};
    }
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("method");
    w.String(method.data(), static_cast<rapidjson::SizeType>(method.size()));
    if (!params_json.empty()) {
      w.Key("params");
      w.RawValue(params_json.data(), params_json.size(), rapidjson::kObjectType);
    }
    w.EndObject();
    pending_[k] = buffer.GetString();
    return {};
  }

  void finish(mcp::ToolResult result) override {
    if (finished_) return;
    // A tool that gives up with an error after the client was refused something it did not
    // declare failed for want of that capability: the revision's answer is -32021.
    if (!missing_.empty() && pending_.empty() && is_error(result)) return missing_capability();
    if (auto fits = object_.server_.tools->check_structured(tool_, result); !fits) {
      log::error("tool_output_schema_mismatch", {{"error", fits.error().message}});
      result = mcp::ToolResult::error(fits.error().message);
    }
    end(200, mcp::result_response(*request().message.id, object_.wrap(result.json, "complete")));
  }

  bool finished() const override { return finished_; }

  // Runs a piece of the handler, then looks at where the call stands: a throw finishes
  // it with an error result (a failure of the store fails the turn); questions nobody
  // answered yet end the round (input_required); a call with nothing left to wait for
  // that was refused something the client cannot do is answered -32021.
  void run(const std::function<void()>& step) {
    try {
      step();
    } catch (const ErrorException& e) {
      if (!is_input_error(e.error().code)) throw;
      finish(mcp::ToolResult::error(std::string("tool failed: ") + e.what()));
    } catch (const std::exception& e) {
      finish(mcp::ToolResult::error(std::string("tool failed: ") + e.what()));
    }
    if (finished_) return;
    if (!pending_.empty()) return input_required();
    if (!missing_.empty() && waiting_ == 0) return missing_capability();
  }

  // The response becomes a stream once the call has emitted something and runs on past
  // its first turn: what was emitted so far goes first, the rest as it comes. A call that
  // emits nothing is answered with plain JSON whenever it finishes.
  void open_stream() {
    first_turn_ = false;
    if (finished_ || streaming_ || buffered_count_ == 0) return;
    streaming_ = true;
    auto body = std::make_shared<mcp::StreamBody>();
    std::string first = std::move(buffered_);
    buffered_.clear();
    object_.after_commit([self = shared_from_this(), body, first = std::move(first)] {
      body->write(first);
      self->sink_ = mcp::spawn_sse_sink(self->object_.system(), body, self->object_.options_.sink, first.size());
      self->object_.adopt(self->sink_, [self] {
        // The client closed the stream: that is how the revision cancels a request.
        if (self->finished_) return;
        self->finished_ = true;
        log::debug("modern_call_cancelled", {{"request", self->request().message.id->to_json()}});
        self->object_.delete_all().value_or_throw();
        self->object_.dispose_empty();
      });
      HttpResponse head(200, {{"Content-Type", mcp::kEventStream},
                              {"Cache-Control", "no-cache"},
                              {"X-Accel-Buffering", "no"}});
      head.stream = body;
      self->object_.call_.responder->respond(std::move(head));
    });
  }

 private:
  const mcp::ModernRequest& request() const { return object_.call_.request; }

  void emit(std::string message) {
    if (finished_) return;
    if (!streaming_) {
      buffered_ += sse_message(message);
      ++buffered_count_;
      // After the first turn nothing else would send it: the stream starts now.
      if (!first_turn_) open_stream();
      return;
    }
    object_.after_commit([self = shared_from_this(), bytes = sse_message(message)]() mutable {
      if (self->sink_) caf::anon_send(self->sink_, mcp::SinkWrite{std::move(bytes), false, false});
    });
  }

  // The call's answer: `message` at `status` (when the response has not started; a stream
  // already at 200 carries it as its last event), then the object's end.
  void end(int status, std::string message, bool keep_record = false) {
    finished_ = true;
    if (streaming_) {
      object_.after_commit([self = shared_from_this(), bytes = sse_message(message)]() mutable {
        if (self->sink_) caf::anon_send(self->sink_, mcp::SinkWrite{std::move(bytes), true, false});
      });
    } else {
      HttpResponse res;
      if (buffered_count_ == 0) {
        res = HttpResponse{status, {{"Content-Type", "application/json"}}, std::move(message)};
      } else {
        res = HttpResponse{200, {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}},
                           std::move(buffered_) + sse_message(message)};
      }
      object_.after_commit([responder = object_.call_.responder, res = std::move(res)]() mutable {
        responder->respond(std::move(res));
      });
    }
    if (keep_record) {
      object_.dispose();
    } else {
      object_.delete_all().value_or_throw();
      object_.dispose_empty();
    }
  }

  // Ends the round (McpRequest::issue_state); the object keeps its record and leaves.
  void input_required() {
    std::string response = object_.issue_state(pending_, answers_, round_);
    log::debug("modern_input_required", {{"round", std::to_string(round_ + 1)},
                                         {"questions", std::to_string(pending_.size())}});
    end(200, std::move(response), true);
  }

  void missing_capability() { end(400, object_.missing_capability(missing_)); }

  McpRequest& object_;
  Inbox inbox_;
  const mcp::ToolRegistry::Entry& tool_;
  std::string arguments_;
  std::map<std::string, std::string> answers_;  // from earlier rounds and this retry
  std::uint32_t round_;
  Lease lease_;
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

std::string McpRequest::issue_state(const std::map<std::string, std::string>& asked,
                                    const std::map<std::string, std::string>& answers, std::uint32_t round) {
  std::string secret(16, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), 16) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  Record record;
  record.round = round + 1;
  record.secret_digest = sha256_hex(secret);
  record.owner = call_.caller;
  record.method = call_.request.message.method;
  record.digest = digest_;
  record.answers = answers;
  record.asked = asked;
  put(kRecordKey, record.to_json()).value_or_throw();
  set_alarm(clock().now_ms() + options_.state_ttl.count()).value_or_throw();
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("inputRequests");
  w.StartObject();
  for (const auto& [k, v] : asked) {
    w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
    w.RawValue(v.data(), v.size(), rapidjson::kObjectType);
  }
  w.EndObject();
  std::string state = mcp::encode_request_state(mcp::RequestState{call_.handle, record.round, secret});
  w.Key("requestState");
  w.String(state.data(), static_cast<rapidjson::SizeType>(state.size()));
  w.EndObject();
  return mcp::result_response(*call_.request.message.id, wrap(buffer.GetString(), "input_required"));
}

std::string McpRequest::missing_capability(const std::vector<std::string>& missing) const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("requiredCapabilities");
  w.StartObject();
  for (const auto& capability : missing) {
    w.Key(capability.data(), static_cast<rapidjson::SizeType>(capability.size()));
    w.StartObject();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return mcp::error_response(call_.request.message.id, mcp::kMissingRequiredClientCapability,
                             "the request needs a client capability it did not declare: " + missing.front(),
                             buffer.GetString());
}

void McpRequest::conclude(int status, std::string message) {
  after_commit([responder = call_.responder, status, message = std::move(message)]() mutable {
    responder->respond(HttpResponse{status, {{"Content-Type", "application/json"}}, std::move(message)});
  });
  delete_all().value_or_throw();
  dispose_empty();
}

void McpRequest::handle(mcp::ModernCall call) {
  if (running_ && !running_->finished()) {
    // Each request object serves one request at a time; a second one naming it (a
    // requestState sent twice at once) waits for nothing and is refused.
    call.responder->respond(HttpResponse{
        400, {{"Content-Type", "application/json"}},
        mcp::error_response(call.request.message.id, mcp::kInvalidParams,
                            "params.requestState is in use by a request still running")});
    return;
  }
  call_ = std::move(call);
  storage_ = std::make_unique<Storage>(*this);
  const Message& m = call_.request.message;
  rapidjson::Document params;
  params.Parse(m.params.empty() ? "{}" : m.params.c_str());
  if (params.HasParseError() || !params.IsObject()) {
    return conclude(400, mcp::error_response(m.id, mcp::kInvalidParams, "params must be an object"));
  }
  digest_ = params_digest(m.method, params);
  std::map<std::string, std::string> answers;
  std::uint32_t round = 0;
  if (!call_.secret.empty()) {
    auto stored = get(kRecordKey).value_or_throw();
    if (!stored) {
      return conclude(400, mcp::error_response(m.id, mcp::kInvalidParams,
                                               "params.requestState is unknown, already used or expired"));
    }
    Record record = Record::from_json(*stored);
    auto refuse = [this, &m](std::string why) {
      // The record stays for its rightful retry; this activation leaves.
      after_commit([responder = call_.responder,
                    body = mcp::error_response(m.id, mcp::kInvalidParams, why)]() mutable {
        responder->respond(HttpResponse{400, {{"Content-Type", "application/json"}}, std::move(body)});
      });
      dispose();
    };
    std::string digest = sha256_hex(call_.secret);
    bool secret_ok = digest.size() == record.secret_digest.size() &&
                     CRYPTO_memcmp(digest.data(), record.secret_digest.data(), digest.size()) == 0;
    if (!secret_ok || record.round != call_.round || !(record.owner == call_.caller)) {
      log::info("request_state_refused", {{"reason", !secret_ok ? "secret"
                                                     : record.round != call_.round ? "round"
                                                                                   : "owner"}});
      return refuse("params.requestState is unknown, already used or expired");
    }
    if (record.method != m.method || record.digest != digest_) {
      return refuse("params.requestState belongs to another request: send the same method and params again");
    }
    if (const rapidjson::Value* responses = member(params, "inputResponses")) {
      if (!responses->IsObject()) return refuse("params.inputResponses must be an object");
      for (const auto& [key, asked] : record.asked) {
        const rapidjson::Value* answer = member(*responses, key.c_str());
        if (!answer) continue;
        rapidjson::Document question;
        question.Parse(asked.c_str());
        std::string method = question["method"].GetString();
        if (auto why = misfit(method, *answer)) {
          return refuse("params.inputResponses." + key + " " + *why + " (the answer to " + method + ")");
        }
        record.answers[key] = compact(*answer);
      }
    }
    // Good once: the record goes with this turn, whatever the run does next.
    del(kRecordKey).value_or_throw();
    delete_alarm().value_or_throw();
    answers = std::move(record.answers);
    round = record.round;
  }
  if (const rapidjson::Value* responses = member(params, "inputResponses")) {
    if (!responses->IsObject()) {
      return conclude(400, mcp::error_response(m.id, mcp::kInvalidParams, "params.inputResponses must be an object"));
    }
    // Answers sent without a state (or for questions the state did not record) are taken
    // as they are; each is checked when the tool asks its question.
    for (auto it = responses->MemberBegin(); it != responses->MemberEnd(); ++it) {
      std::string key(it->name.GetString(), it->name.GetStringLength());
      if (!answers.count(key)) answers[key] = compact(it->value);
    }
  }
  if (m.method == "tools/call") return call_tool(params, std::move(answers), round);
  read_or_get(params, std::move(answers), round);
}

// The questions of one prompts/get (PromptInput): answered from the request, or noted.
class PromptAsk : public mcp::PromptInput {
 public:
  PromptAsk(const std::map<std::string, std::string>& answers, const std::string& capabilities)
      : answers_(answers), capabilities_(capabilities) {}

  Result<std::optional<std::string>> ask(std::string_view key, std::string_view method,
                                         std::string_view params_json) override {
    if (!valid_key(key)) {
      return Error{ErrorCode::invalid_argument, "an input key is 1 to 64 of [A-Za-z0-9_.-], not \"" +
                                                    std::string(key) + "\""};
    }
    auto refusal = mcp::refuse_client_request(method, params_json, capabilities_, "in this request's _meta");
    if (refusal) {
      if (!refusal->capability.empty()) missing.push_back(refusal->capability);
      return Error{ErrorCode::invalid_argument, refusal->message};
    }
    std::string k(key);
    if (auto answer = answers_.find(k); answer != answers_.end()) {
      rapidjson::Document parsed;
      parsed.Parse(answer->second.c_str());
      if (auto why = misfit(method, parsed)) {
        malformed = "params.inputResponses." + k + " " + *why + " (the answer to " + std::string(method) + ")";
        return Error{ErrorCode::invalid_argument, malformed};
      }
      return std::optional<std::string>(answer->second);
    }
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("method");
    w.String(method.data(), static_cast<rapidjson::SizeType>(method.size()));
    w.Key("params");
    w.RawValue(params_json.empty() ? "{}" : params_json.data(), params_json.empty() ? 2 : params_json.size(),
               rapidjson::kObjectType);
    w.EndObject();
    pending[k] = buffer.GetString();
    return std::optional<std::string>();
  }

  std::map<std::string, std::string> pending;
  std::vector<std::string> missing;
  std::string malformed;

 private:
  const std::map<std::string, std::string>& answers_;
  const std::string& capabilities_;
};

void McpRequest::read_or_get(const rapidjson::Document& params, std::map<std::string, std::string> answers,
                             std::uint32_t round) {
  const Message& m = call_.request.message;
  std::string params_json = compact(params);
  PromptAsk questions(answers, call_.request.client_capabilities);
  mcp::MethodResult answer =
      m.method == "prompts/get" ? mcp::prompts_get_result(server_.prompts, params_json, *storage_, &questions)
                                : mcp::resources_read_result(server_.resources, params_json, *storage_);
  if (!questions.malformed.empty()) {
    return conclude(400, mcp::error_response(m.id, mcp::kInvalidParams, questions.malformed));
  }
  if (!questions.pending.empty()) {
    std::string response = issue_state(questions.pending, answers, round);
    after_commit([responder = call_.responder, response = std::move(response)]() mutable {
      responder->respond(HttpResponse{200, {{"Content-Type", "application/json"}}, std::move(response)});
    });
    return dispose();
  }
  if (auto* error = std::get_if<mcp::MethodError>(&answer); error && !questions.missing.empty()) {
    return conclude(400, missing_capability(questions.missing));
  }
  if (auto* error = std::get_if<mcp::MethodError>(&answer)) {
    // SEP-2164: a resource that is not there is -32602 in this revision (never -32002).
    int code = error->code == mcp::kResourceNotFound ? mcp::kInvalidParams : error->code;
    return conclude(error->code == mcp::kMethodNotFound ? 404 : 200,
                    mcp::error_response(m.id, code, error->message, error->data_json));
  }
  std::optional<mcp::CacheHints> hints;
  if (m.method == "resources/read") hints = mcp::CacheHints{0, false};
  conclude(200, mcp::result_response(*m.id, wrap(std::get<std::string>(answer), "complete", hints)));
}

void McpRequest::call_tool(const rapidjson::Document& params, std::map<std::string, std::string> answers,
                           std::uint32_t round) {
  const Message& m = call_.request.message;
  auto fail = [this, &m](std::string why) {
    conclude(200, mcp::error_response(m.id, mcp::kInvalidParams, why));
  };
  const rapidjson::Value* name = member(params, "name");
  if (!name || !name->IsString()) return fail("tools/call needs params.name (a string)");
  std::string_view tool_name(name->GetString(), name->GetStringLength());
  const mcp::ToolRegistry::Entry* entry = server_.tools ? server_.tools->find(tool_name) : nullptr;
  if (!entry) return fail("unknown tool: " + std::string(tool_name));
  std::string arguments = "{}";
  if (const rapidjson::Value* args = member(params, "arguments")) {
    if (!args->IsObject()) return fail("params.arguments must be an object");
    arguments = compact(*args);
  }
  if (auto valid = server_.tools->validate_arguments(*entry, arguments); !valid) {
    return conclude(200, mcp::result_response(
                             *m.id, wrap(mcp::ToolResult::error(valid.error().message).json, "complete")));
  }
  auto context = std::make_shared<Call>(*this, *entry, std::move(arguments), std::move(answers), round);
  running_ = context;
  const auto& handler = server_.tools->spec(*entry).handler;
  context->run([&] { handler(context); });
  context->open_stream();
}

}  // namespace

Result<void> register_mcp_request(Runtime& runtime, const McpRequestOptions& options) {
  if (options.server == nullptr) {
    return Error{ErrorCode::invalid_argument, "the mcp-request namespace needs the server's registries"};
  }
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::milliseconds(0);  // each object leaves once its request is answered
  ns.storage_cache_bytes = 64 * 1024;
  return runtime.register_namespace(
      kMcpRequestNamespace, [&options] { return std::make_unique<McpRequest>(options); }, ns);
}

}  // namespace dorm::actors
