// McpRequest — the durable object behind one request of MCP 2026-07-28 (what it promises:
// dorm/actors/mcp_request.hpp): the request, its rounds of input_required, and the context
// its tool sees. Tasks are in mcp_request_tasks.cpp.
#include "mcp_request_internal.hpp"

#include "dorm/mcp/feature_methods.hpp"
#include "dorm/mcp/notifications.hpp"
#include "tool_step.hpp"

namespace dorm::actors {

using namespace request_internal;

namespace request_internal {

// ---- the tool's context ----

void McpRequest::Call::progress(double progress, std::optional<double> total, std::string_view message) {
  if (finished_ || task_ || setup_.progress_token.empty()) return;
  emit(mcp::progress_notification(setup_.progress_token, progress, total, message));
}

void McpRequest::Call::log(std::string_view level, std::string_view data_json) {
  const std::string& wanted = setup_.log_level;
  if (finished_ || task_ || wanted.empty()) return;
  int rank = log_rank(level);
  if (rank < 0 || rank < log_rank(wanted)) return;
  emit(mcp::log_notification(level, data_json));
}

void McpRequest::Call::notify_session(std::string_view method, std::string_view) {
  auto list = mcp::ListenHub::list_of(method);
  mcp::ListenHub* hub = object_.server_.listen;
  if (finished_ || !list || !hub) {
    log::debug("modern_notification_dropped", {{"method", std::string(method)}});
    return;
  }
  object_.after_commit([hub, list] { hub->list_changed(*list); });
}

void McpRequest::Call::resource_updated(std::string_view uri) {
  if (finished_ || !object_.server_.listen) return;
  object_.after_commit([hub = object_.server_.listen, uri = std::string(uri)] { hub->resource_updated(uri); });
}

void McpRequest::Call::after(std::chrono::milliseconds delay, std::function<void()> then) {
  ++waiting_;
  object_.after(delay, [self = shared_from_this(), then = std::move(then)] {
    --self->waiting_;
    if (!self->finished_) self->run(then);
  });
}

void McpRequest::Call::post(std::function<void()> then) {
  ++waiting_;
  inbox_.post([self = shared_from_this(), then = std::move(then)] {
    --self->waiting_;
    if (!self->finished_) self->run(then);
  });
}

Result<void> McpRequest::Call::ask(std::string_view key, std::string_view method, std::string_view params_json,
                                   mcp::ClientReplyHandler on_reply) {
  if (finished_) return Error{ErrorCode::invalid_argument, "the call is finished: it cannot ask the client"};
  if (!valid_key(key)) {
    return Error{ErrorCode::invalid_argument, "an input key is 1 to 64 of [A-Za-z0-9_.-], not \"" + std::string(key) + "\""};
  }
  std::string k(key);
  if (pending_.count(k) || asked_.count(k)) {
    return Error{ErrorCode::invalid_argument, "the call already asked under the key " + k};
  }
  auto refusal = mcp::refuse_client_request(method, params_json, setup_.capabilities, "in this request's _meta");
  if (refusal) {
    if (!refusal->capability.empty()) missing_.push_back(refusal->capability);
    return Error{ErrorCode::invalid_argument, refusal->message};
  }
  asked_.insert(k);
  if (method == "ping") {
    // Nothing to ask: the client is there, since it sent this request.
    post([on_reply = std::move(on_reply)] { on_reply(mcp::ClientReply{mcp::ClientReply::Kind::result, "{}", {}}); });
    return {};
  }
  if (auto answer = answers_.find(k); answer != answers_.end()) {
    rapidjson::Document parsed;
    parsed.Parse(answer->second.c_str());
    if (auto why = misfit(method, parsed)) {
      std::string message = "params.inputResponses." + k + " " + *why + " (the answer to " + std::string(method) + ")";
      if (task_) {
        fail(mcp::kInvalidParams, message);
      } else {
        end(400, mcp::error_response(setup_.id, mcp::kInvalidParams, message));
      }
      return Error{ErrorCode::invalid_argument, "the client's answer to " + k + " is malformed"};
    }
    post([on_reply = std::move(on_reply), json = answer->second] {
      on_reply(mcp::ClientReply{mcp::ClientReply::Kind::result, json, {}});
    });
    return {};
  }
  pending_[k] = question_json(method, params_json);
  return {};
}

void McpRequest::Call::fail(int code, std::string_view message) {
  if (finished_) return;
  if (task_) {
    finished_ = true;
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("code");
    w.Int(code);
    w.Key("message");
    w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
    w.EndObject();
    return object_.task_settled("failed", {}, buffer.GetString(), {}, answers_);
  }
  end(200, mcp::error_response(setup_.id, code, message));
}

void McpRequest::Call::finish(mcp::ToolResult result) {
  if (finished_) return;
  // A tool that gives up with an error after the client was refused something it did not
  // declare failed for want of that capability: the revision's answer is -32021.
  if (!missing_.empty() && pending_.empty() && is_error(result)) return missing_capability();
  if (auto fits = object_.server_.tools->check_structured(tool_, result); !fits) {
    log::error("tool_output_schema_mismatch", {{"error", fits.error().message}});
    result = mcp::ToolResult::error(fits.error().message);
  }
  if (task_) {
    finished_ = true;
    return object_.task_settled("completed", result.json, {}, {}, answers_);
  }
  end(200, mcp::result_response(*setup_.id, object_.wrap(result.json, "complete")));
}

void McpRequest::Call::run(const std::function<void()>& step) {
  run_tool_step(step, [this](mcp::ToolResult r) { finish(std::move(r)); });
  if (finished_) return;
  if (!pending_.empty()) return input_required();
  if (!missing_.empty() && waiting_ == 0) return missing_capability();
}

void McpRequest::Call::first_turn_over() {
  first_turn_ = false;
  if (finished_) return;
  if (setup_.task_eligible && !task_) {
    task_ = true;
    buffered_.clear();  // a task has no stream: what it emitted goes nowhere
    buffered_count_ = 0;
    return object_.become_task(*this);
  }
  open_stream();
}

void McpRequest::Call::open_stream() {
  if (finished_ || streaming_ || task_ || buffered_count_ == 0) return;
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
      log::debug("modern_call_cancelled", {{"request", self->setup_.id->to_json()}});
      self->object_.delete_all().value_or_throw();
      self->object_.dispose_empty();
    });
    HttpResponse head(200, {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
    head.stream = body;
    self->setup_.responder->respond(std::move(head));
  });
}

void McpRequest::Call::emit(std::string message) {
  if (finished_ || task_) return;
  if (!streaming_) {
    buffered_ += sse_message(message);
    ++buffered_count_;
    // After the first turn nothing else would send it: the stream starts now.
    if (!first_turn_) open_stream();
    return;
  }
  object_.after_commit([self = shared_from_this(), bytes = sse_message(message)]() mutable {
    self->object_.tell_helper(self->sink_,
                              caf::make_message(mcp::SinkWrite{std::move(bytes), false, false}));
  });
}

void McpRequest::Call::end(int status, std::string message, bool keep_record) {
  finished_ = true;
  if (streaming_) {
    object_.after_commit([self = shared_from_this(), bytes = sse_message(message)]() mutable {
      self->object_.tell_helper(self->sink_,
                                caf::make_message(mcp::SinkWrite{std::move(bytes), true, false}));
    });
  } else {
    HttpResponse res;
    if (buffered_count_ == 0) {
      res = HttpResponse{status, {{"Content-Type", "application/json"}}, std::move(message)};
    } else {
      res = HttpResponse{200, {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}},
                         std::move(buffered_) + sse_message(message)};
    }
    object_.after_commit([responder = setup_.responder, res = std::move(res)]() mutable {
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

void McpRequest::Call::input_required() {
  if (before_input_required && !task_) {
    auto hook = std::move(before_input_required);
    before_input_required = nullptr;
    hook();
  }
  if (task_) {
    // The task waits for tasks/update; this run of its tool ends here.
    finished_ = true;
    return object_.task_settled("input_required", {}, {}, pending_, answers_);
  }
  std::string response = object_.issue_state(pending_, answers_, round_);
  log::debug("modern_input_required", {{"round", std::to_string(round_ + 1)},
                                       {"questions", std::to_string(pending_.size())}});
  end(200, std::move(response), true);
}

void McpRequest::Call::missing_capability() {
  if (task_) {
    finished_ = true;
    rapidjson::Document error;
    error.Parse(object_.missing_capability(setup_.id, missing_).c_str());
    return object_.task_settled("failed", {}, compact(error["error"]), {}, answers_);
  }
  end(400, object_.missing_capability(setup_.id, missing_));
}

// ---- the object ----

caf::behavior McpRequest::behavior() {
  return {[this](mcp::ModernCall& call) { handle(std::move(call)); },
          // Sent at boot to the tasks the index names: on_start has done the work.
          [](const mcp::SessionWake&) { return true; }};
}

void McpRequest::answer(const std::shared_ptr<mcp::Responder>& responder, int status, std::string message) {
  after_commit([responder, status, message = std::move(message)]() mutable {
    responder->respond(HttpResponse{status, {{"Content-Type", "application/json"}}, std::move(message)});
  });
}

void McpRequest::conclude(int status, std::string message) {
  answer(call_.responder, status, std::move(message));
  delete_all().value_or_throw();
  dispose_empty();
}

std::string McpRequest::issue_state(const std::map<std::string, std::string>& asked,
                                    const std::map<std::string, std::string>& answers, std::uint32_t round) {
  Record record;
  record.round = round + 1;
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
  // Sealed for its owner under the server's key: only that principal's retry opens it.
  std::string state = mcp::seal_request_state(mcp::RequestState{call_.handle, record.round}, record.owner,
                                              runtime().derive_key(mcp::kRequestStateKeyPurpose));
  w.Key("requestState");
  w.String(state.data(), static_cast<rapidjson::SizeType>(state.size()));
  w.EndObject();
  return mcp::result_response(*call_.request.message.id, wrap(buffer.GetString(), "input_required"));
}

std::string McpRequest::missing_capability(const std::optional<mcp::RequestId>& id,
                                           const std::vector<std::string>& missing) const {
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
  return mcp::error_response(id, mcp::kMissingRequiredClientCapability,
                             "the request needs a client capability it did not declare: " + missing.front(),
                             buffer.GetString());
}

void McpRequest::handle(mcp::ModernCall call) {
  const std::string& method = call.request.message.method;
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") return task_request(call);
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
  if (call_.resumed) {
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
    // The endpoint checked the state's MAC for this caller; the record says whether its
    // round is the open one and whose it is.
    if (record.round != call_.round || !(record.owner == call_.caller)) {
      log::info("request_state_refused", {{"reason", record.round != call_.round ? "round" : "owner"}});
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
    pending[k] = question_json(method, params_json);
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
    McpRequest::answer(call_.responder, 200, issue_state(questions.pending, answers, round));
    return dispose();
  }
  if (auto* error = std::get_if<mcp::MethodError>(&answer); error && !questions.missing.empty()) {
    return conclude(400, missing_capability(m.id, questions.missing));
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
  const auto& spec = server_.tools->spec(*entry);
  bool tasks = mcp::declares_extension(call_.request.client_capabilities, mcp::kTasksExtension);
  if (spec.task_support == mcp::TaskSupport::required && !tasks) {
    auto refusal = mcp::tasks_extension_required(
        m.id, "the tool " + spec.name + " runs only as a task: declare the " + mcp::kTasksExtension +
                  " extension in this request's clientCapabilities");
    return conclude(refusal.http_status, std::move(refusal.body));
  }
  std::string arguments = "{}";
  if (const rapidjson::Value* args = member(params, "arguments")) {
    if (!args->IsObject()) return fail("params.arguments must be an object");
    arguments = compact(*args);
  }
  if (auto valid = server_.tools->validate_arguments(*entry, arguments); !valid) {
    return conclude(200, mcp::result_response(
                             *m.id, wrap(mcp::ToolResult::error(valid.error().message).json, "complete")));
  }
  CallSetup setup;
  setup.capabilities = call_.request.client_capabilities;
  setup.progress_token = call_.request.progress_token;
  setup.log_level = call_.request.log_level;
  setup.id = m.id;
  setup.responder = call_.responder;
  setup.task_eligible = tasks && spec.task_support != mcp::TaskSupport::forbidden;
  auto context = std::make_shared<Call>(*this, *entry, std::move(arguments), std::move(answers), round, std::move(setup));
  running_ = context;
  context->run([&] { spec.handler(context); });
  context->first_turn_over();
}

}  // namespace request_internal

Result<void> register_mcp_request(Runtime& runtime, const McpRequestOptions& options) {
  if (options.server == nullptr) {
    return Error{ErrorCode::invalid_argument, "the mcp-request namespace needs the server's registries"};
  }
  if (options.task_ttl.count() < 1) return Error{ErrorCode::invalid_argument, "task_ttl must be at least 1 ms"};
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::milliseconds(0);  // each object leaves once it has answered
  ns.storage_cache_bytes = 64 * 1024;
  return runtime.register_namespace(
      kMcpRequestNamespace, [&options] { return std::make_unique<McpRequest>(options); }, ns);
}

}  // namespace dorm::actors
