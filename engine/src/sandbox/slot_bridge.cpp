// The bridge: the native functions the prelude holds (never user code directly), called on
// the slot thread while an execution runs. Each checks its limit before it does anything.
#include "slot_execution.hpp"

namespace dorm::engine::sandbox {

namespace {
// Each slot has an isolate of its own and puts itself in the isolate's data.
Slot* slot_of(const v8::FunctionCallbackInfo<v8::Value>& info) {
  return static_cast<Slot*>(info.GetIsolate()->GetData(Slot::kIsolateDataIndex));
}
}  // namespace

std::span<const BridgeFunction> Slot::bridge() {
  static const BridgeFunction functions[] = {
      {"call", &Slot::js_call},
      {"log", &Slot::js_log},
      {"emit", &Slot::js_emit},
      {"timerSet", &Slot::js_timer_set},
      {"timerClear", &Slot::js_timer_clear},
  };
  return functions;
}

void Slot::js_call(const v8::FunctionCallbackInfo<v8::Value>& info) {
  Slot* self = slot_of(info);
  v8::Isolate* isolate = info.GetIsolate();
  if (self->current_ == nullptr || info.Length() < 2) return;
  Execution& e = *self->current_;
  std::string path = utf8(isolate, info[0]);
  std::string args = utf8(isolate, info[1]);
  if (path.size() > kMaxToolPathBytes) {
    return throw_type_error(isolate, "a tool path is at most " + std::to_string(kMaxToolPathBytes) + " bytes");
  }
  if (args.size() > kMaxToolArgsBytes) {
    return throw_type_error(isolate, "tool arguments of " + std::to_string(args.size()) +
                                         " bytes pass the limit of " + mib(kMaxToolArgsBytes));
  }
  if (e.calls_made >= e.limits.tool_calls) {
    return self->kill(FailureKind::tool_call_limit, "the execution made more than " +
                                                        std::to_string(e.limits.tool_calls) +
                                                        " tool calls (tool_calls)");
  }
  if (e.outstanding.size() >= e.limits.concurrent_tool_calls) {
    return self->kill(FailureKind::tool_concurrency_limit,
                      "the execution had more than " + std::to_string(e.limits.concurrent_tool_calls) +
                          " tool calls outstanding at once (concurrent_tool_calls)");
  }
  std::uint32_t seq = ++e.calls_made;
  if (seq <= e.recorded_calls.size()) {
    const ToolCallEntry& recorded = *e.recorded_calls[seq - 1];
    if (recorded.path != path || recorded.args_json != args) {
      return self->kill(FailureKind::nondeterministic_replay,
                        "replay diverged at tool call " + std::to_string(seq) + ": the journal has tools." +
                            recorded.path + "(" + recorded.args_json + ") but the code called tools." + path +
                            "(" + args + ")");
    }
  } else {
    self->channel_.send(wire::ToolCall{e.exec, ToolCallEntry{seq, path, std::move(args)}});
  }
  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(isolate->GetCurrentContext()).ToLocal(&resolver)) return;
  e.outstanding[seq].Reset(isolate, resolver);
  self->set_wall_deadline(e);
  info.GetReturnValue().Set(resolver->GetPromise());
}

void Slot::js_log(const v8::FunctionCallbackInfo<v8::Value>& info) {
  Slot* self = slot_of(info);
  v8::Isolate* isolate = info.GetIsolate();
  if (self->current_ == nullptr || info.Length() < 2) return;
  Execution& e = *self->current_;
  std::uint32_t level = info[0]->Uint32Value(isolate->GetCurrentContext()).FromMaybe(2);
  if (level > static_cast<std::uint32_t>(wire::LogLevel::error)) level = 2;
  std::string text = utf8(isolate, info[1]);
  auto lvl = static_cast<wire::LogLevel>(level);
  // Counted as the line a reader sees: "[level] text\n".
  std::uint64_t bytes = text.size() + to_string(lvl).size() + 4;
  if (e.log_bytes + bytes > e.limits.log_bytes) {
    return self->kill(FailureKind::log_limit, "console output passed the log limit of " +
                                                  mib(e.limits.log_bytes) + " (log_bytes)");
  }
  e.log_bytes += bytes;
  self->channel_.send(wire::Log{e.exec, lvl, std::move(text)});
}

void Slot::js_emit(const v8::FunctionCallbackInfo<v8::Value>& info) {
  Slot* self = slot_of(info);
  v8::Isolate* isolate = info.GetIsolate();
  if (self->current_ == nullptr || info.Length() < 1) return;
  Execution& e = *self->current_;
  std::string json = utf8(isolate, info[0]);
  if (e.output_bytes + json.size() > e.limits.output_bytes) {
    return self->kill(FailureKind::output_limit, "emitted values passed the output limit of " +
                                                     mib(e.limits.output_bytes) + " (output_bytes)");
  }
  e.output_bytes += json.size();
  self->channel_.send(wire::Emit{e.exec, std::move(json)});
}

void Slot::js_timer_set(const v8::FunctionCallbackInfo<v8::Value>& info) {
  Slot* self = slot_of(info);
  v8::Isolate* isolate = info.GetIsolate();
  if (self->current_ == nullptr || info.Length() < 2) return;
  Execution& e = *self->current_;
  auto context = isolate->GetCurrentContext();
  std::uint32_t id = info[0]->Uint32Value(context).FromMaybe(0);
  auto delay = static_cast<std::int64_t>(info[1]->IntegerValue(context).FromMaybe(0));
  if (id != e.last_timer + 1) return;  // only the prelude calls this, with ids 1, 2, ...
  if (e.timers.size() >= kMaxPendingTimers) {
    return throw_type_error(isolate, "at most " + std::to_string(kMaxPendingTimers) + " timers may be pending");
  }
  e.last_timer = id;
  e.timers.insert(id);
  auto recorded = e.recorded_sets.find(id);
  if (recorded != e.recorded_sets.end()) {
    if (recorded->second->delay_ms != delay) {
      return self->kill(FailureKind::nondeterministic_replay,
                        "replay diverged at timer " + std::to_string(id) + ": the journal has a delay of " +
                            std::to_string(recorded->second->delay_ms) + " ms, the code asked for " +
                            std::to_string(delay) + " ms");
    }
  } else {
    self->channel_.send(wire::TimerSet{e.exec, id, delay});
  }
}

void Slot::js_timer_clear(const v8::FunctionCallbackInfo<v8::Value>& info) {
  Slot* self = slot_of(info);
  v8::Isolate* isolate = info.GetIsolate();
  if (self->current_ == nullptr || info.Length() < 1) return;
  Execution& e = *self->current_;
  std::uint32_t id = info[0]->Uint32Value(isolate->GetCurrentContext()).FromMaybe(0);
  if (e.timers.erase(id) == 0) return;
  if (e.recorded_clears.count(id) == 0) self->channel_.send(wire::TimerClear{e.exec, id});
}

}  // namespace dorm::engine::sandbox
