// Tasks of MCP 2026-07-28 (the io.modelcontextprotocol/tasks extension) as request
// objects: what dorm/actors/mcp_request.hpp promises about them.
#include "dorm/mcp/execution_outcome.hpp"
#include "dorm/mcp/reaper.hpp"
#include "mcp_request_internal.hpp"

namespace dorm::actors {

using namespace request_internal;

namespace request_internal {

std::string TaskRecord::to_json() const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  auto str = [&w](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  auto text = [&](const char* key, std::string_view value) {
    w.Key(key);
    str(value);
  };
  w.StartObject();
  text("id", id);
  text("status", status);
  text("statusMessage", status_message);
  w.Key("created");
  w.Int64(created_ms);
  w.Key("updated");
  w.Int64(updated_ms);
  w.Key("ttl");
  w.Int64(ttl_ms);
  text("user", owner.user);
  text("org", owner.org);
  text("params", params);
  text("capabilities", capabilities);
  text("result", result);
  text("error", error);
  for (const auto* map : {&asked, &answers}) {
    w.Key(map == &asked ? "asked" : "answers");
    w.StartObject();
    for (const auto& [k, v] : *map) {
      str(k);
      w.RawValue(v.data(), v.size(), rapidjson::kObjectType);
    }
    w.EndObject();
  }
  w.Key("generation");
  w.Uint64(runner.generation);
  w.Key("activation");
  w.Uint64(runner.activation);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

TaskRecord TaskRecord::from_json(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) throw std::runtime_error("task record is not readable");
  auto text = [&doc](const char* key) {
    const rapidjson::Value* v = member(doc, key);
    if (!v || !v->IsString()) throw std::runtime_error(std::string("task record without ") + key);
    return std::string(v->GetString(), v->GetStringLength());
  };
  auto number = [&doc](const char* key) {
    const rapidjson::Value* v = member(doc, key);
    if (!v || !v->IsUint64()) throw std::runtime_error(std::string("task record without ") + key);
    return v->GetUint64();
  };
  TaskRecord t;
  t.id = text("id");
  t.status = text("status");
  t.status_message = text("statusMessage");
  t.created_ms = static_cast<std::int64_t>(number("created"));
  t.updated_ms = static_cast<std::int64_t>(number("updated"));
  t.ttl_ms = static_cast<std::int64_t>(number("ttl"));
  t.owner = mcp::Identity{text("user"), text("org")};
  t.params = text("params");
  t.capabilities = text("capabilities");
  t.result = text("result");
  t.error = text("error");
  for (auto* map : {&t.asked, &t.answers}) {
    const rapidjson::Value* obj = member(doc, map == &t.asked ? "asked" : "answers");
    if (!obj || !obj->IsObject()) throw std::runtime_error("task record without its maps");
    for (auto it = obj->MemberBegin(); it != obj->MemberEnd(); ++it) {
      (*map)[std::string(it->name.GetString(), it->name.GetStringLength())] = compact(it->value);
    }
  }
  t.runner = Epoch{number("generation"), number("activation")};
  return t;
}

void McpRequest::write_task(JsonWriter& w, const TaskRecord& task) const {
  w.Key("taskId");
  w.String(task.id.c_str());
  w.Key("status");
  w.String(task.status.c_str());
  if (!task.status_message.empty()) {
    w.Key("statusMessage");
    w.String(task.status_message.c_str());
  }
  std::string created = mcp::iso8601_utc(task.created_ms);
  std::string updated = mcp::iso8601_utc(task.updated_ms);
  w.Key("createdAt");
  w.String(created.c_str());
  w.Key("lastUpdatedAt");
  w.String(updated.c_str());
  w.Key("ttlMs");
  w.Int64(task.ttl_ms);
  w.Key("pollIntervalMs");
  w.Int64(options_.task_poll_interval.count());
}

std::optional<TaskRecord> McpRequest::load_task() {
  if (task_) return task_;
  auto stored = get(kTaskKey).value_or_throw();
  if (!stored) return std::nullopt;
  task_ = TaskRecord::from_json(*stored);
  return task_;
}

void McpRequest::save_task(TaskRecord& task) {
  task.updated_ms = clock().now_ms();
  put(kTaskKey, task.to_json()).value_or_throw();
  // A new status, or new questions, is told to the owner's subscriptions that listen for
  // this task, once it is committed.
  bool changed = !task_ || task_->status != task.status || task_->asked != task.asked;
  if (changed && server_.listen) {
    after_commit([hub = server_.listen, id = task.id, owner = task.owner, json = detailed_task(task)] {
      hub->task_status(id, owner, json);
    });
  }
  task_ = task;
}

void McpRequest::on_start(StartReason) {
  auto task = load_task();
  if (!task || task->status != "working" || !(task->runner < epoch())) return;
  // Its work died with the activation that ran it: nobody will finish it.
  auto reason = mcp::reap_reason(task->runner, epoch());
  rapidjson::Document response;
  response.Parse(mcp::interrupted_error(mcp::RequestId(task->id), reason, task->runner.generation).c_str());
  task->status = "failed";
  task->status_message = "the server stopped while the task ran; its outcome is unknown";
  task->error = compact(response["error"]);
  index_del(kTaskIndex, task->id).value_or_throw();
  save_task(*task);
  log::info("task_reaped", {{"task", task->id}, {"reason", std::string(mcp::to_string(reason))}});
}

void McpRequest::on_alarm(const AlarmInfo&) {
  if (running_) running_->stop();
  if (auto task = load_task()) index_del(kTaskIndex, task->id).value_or_throw();
  task_.reset();
  delete_all().value_or_throw();
  dispose_empty();
}

void McpRequest::become_task(Call& call) {
  TaskRecord task;
  task.id = call_.handle;
  task.status = "working";
  task.created_ms = clock().now_ms();
  task.ttl_ms = options_.task_ttl.count();
  task.owner = call_.caller;
  task.params = call_.request.message.params;
  task.capabilities = call.setup().capabilities;
  task.answers = call.answers();
  task.runner = epoch();
  save_task(task);
  index_put(kTaskIndex, task.id, "").value_or_throw();
  set_alarm(task.created_ms + task.ttl_ms).value_or_throw();
  log::debug("task_created", {{"task", task.id}});
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  write_task(w, task);
  // The schema's CallToolResult (which schema validators hold every tools/call result
  // to) requires content; an empty one says nothing and keeps them content.
  w.Key("content");
  w.StartArray();
  w.EndArray();
  w.EndObject();
  answer(call.setup().responder, 200, mcp::result_response(*call.setup().id, wrap(buffer.GetString(), "task")));
}

void McpRequest::task_settled(const std::string& status, std::string result, std::string error,
                              std::map<std::string, std::string> asked, std::map<std::string, std::string> answers) {
  auto task = load_task();
  if (!task || task->status == "cancelled") return;  // cancelled: its outcome is not wanted
  task->status = status;
  task->status_message.clear();
  task->result = std::move(result);
  task->error = std::move(error);
  task->asked = std::move(asked);
  task->answers = std::move(answers);
  index_del(kTaskIndex, task->id).value_or_throw();
  save_task(*task);
  log::debug("task_settled", {{"task", task->id}, {"status", status}});
  dispose();
}

std::string McpRequest::detailed(const TaskRecord& task) const { return wrap(detailed_task(task), "complete"); }

std::string McpRequest::detailed_task(const TaskRecord& task) const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  write_task(w, task);
  if (task.status == "completed") {
    // The result as the tools/call would have answered it: a result of this revision,
    // so with its resultType (the official Tasks client checks the inner result as a
    // CallToolResult of 2026-07-28).
    rapidjson::Document result;
    result.Parse(task.result.c_str());
    if (result.IsObject() && !result.HasMember("resultType")) {
      result.AddMember("resultType", "complete", result.GetAllocator());
    }
    w.Key("result");
    result.Accept(w);
  } else if (task.status == "failed") {
    w.Key("error");
    w.RawValue(task.error.data(), task.error.size(), rapidjson::kObjectType);
  } else if (task.status == "input_required") {
    w.Key("inputRequests");
    w.StartObject();
    for (const auto& [k, v] : task.asked) {
      w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
      w.RawValue(v.data(), v.size(), rapidjson::kObjectType);
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

void McpRequest::task_request(const mcp::ModernCall& call) {
  const Message& m = call.request.message;
  auto task = load_task();
  bool idle = !running_ || running_->finished();
  if (!task || !(task->owner == call.caller)) {
    // Unknown, expired, or another principal's: the same answer, so nothing is learned.
    answer(call.responder, 200, mcp::error_response(m.id, mcp::kInvalidParams, "unknown task: " + call.handle));
    if (!task && idle) dispose_empty();
    return;
  }
  if (!storage_) storage_ = std::make_unique<Storage>(*this);
  const std::string ack = wrap("{}", "complete");
  if (m.method == "tasks/get") {
    answer(call.responder, 200, mcp::result_response(*m.id, detailed(*task)));
  } else if (m.method == "tasks/cancel") {
    if (!task->terminal()) {
      if (running_) running_->stop();
      task->status = "cancelled";
      task->status_message = "cancelled by the client";
      index_del(kTaskIndex, task->id).value_or_throw();
      save_task(*task);
    }
    answer(call.responder, 200, mcp::result_response(*m.id, ack));
  } else {  // tasks/update
    rapidjson::Document params;
    params.Parse(m.params.c_str());
    const rapidjson::Value* responses = member(params, "inputResponses");
    if (!responses || !responses->IsObject()) {
      answer(call.responder, 200,
             mcp::error_response(m.id, mcp::kInvalidParams, "tasks/update needs params.inputResponses (an object)"));
    } else {
      // Answers to questions the task does not ask (any more) are ignored; the questions
      // answered leave inputRequests before the ack, so a tasks/get after it sees the rest.
      if (task->status == "input_required") {
        for (auto it = responses->MemberBegin(); it != responses->MemberEnd(); ++it) {
          std::string key(it->name.GetString(), it->name.GetStringLength());
          auto asked = task->asked.find(key);
          if (asked == task->asked.end()) continue;
          rapidjson::Document question;
          question.Parse(asked->second.c_str());
          if (misfit(question["method"].GetString(), it->value)) continue;
          task->answers[key] = compact(it->value);
          task->asked.erase(asked);
        }
        if (task->asked.empty()) {
          task->status = "working";
          task->runner = epoch();
          index_put(kTaskIndex, task->id, "").value_or_throw();
        }
        save_task(*task);
        if (task->status == "working") rerun_task(*task);
      }
      answer(call.responder, 200, mcp::result_response(*m.id, ack));
    }
  }
  if (!running_ || running_->finished()) dispose();
}

void McpRequest::rerun_task(const TaskRecord& task) {
  rapidjson::Document params;
  params.Parse(task.params.c_str());
  const rapidjson::Value* name = member(params, "name");
  const mcp::ToolRegistry::Entry* entry =
      name && name->IsString() && server_.tools ? server_.tools->find(name->GetString()) : nullptr;
  if (!entry) {
    // The tool is gone (a redeploy without it): the task cannot go on.
    return task_settled("failed", {}, R"({"code":-32603,"message":"the task's tool is no longer offered"})", {},
                        task.answers);
  }
  std::string arguments = "{}";
  if (const rapidjson::Value* args = member(params, "arguments"); args && args->IsObject()) arguments = compact(*args);
  CallSetup setup;
  setup.capabilities = task.capabilities;
  setup.task = true;
  auto context = std::make_shared<Call>(*this, *entry, std::move(arguments), task.answers, 0, std::move(setup));
  running_ = context;
  const auto& handler = server_.tools->spec(*entry).handler;
  context->run([&] { handler(context); });
}

}  // namespace request_internal

Result<std::size_t> wake_running_tasks(Runtime& runtime) {
  auto entries = runtime.scan_index(kTaskIndex);
  if (!entries) return std::move(entries).error();
  for (const auto& entry : *entries) {
    auto handle = runtime.get(runtime.id_from_name(kMcpRequestNamespace, entry.key));
    if (handle) runtime.send(*handle, mcp::SessionWake{});
  }
  return entries->size();
}

}  // namespace dorm::actors
