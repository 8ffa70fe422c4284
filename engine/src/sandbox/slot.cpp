#include "slot.hpp"

#include <libplatform/libplatform.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "prelude.hpp"
#include "slot_execution.hpp"
#include "time_platform.hpp"

namespace dorm::engine::sandbox {
namespace {

thread_local Slot* t_slot = nullptr;

// Slot threads get a stack well above the largest JavaScript stack limit, since native frames
// (V8's, and ours under ASan) sit on the same stack.
constexpr std::size_t kThreadStackBytes = 32u << 20;
std::int64_t cpu_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

v8::MaybeLocal<v8::Promise> refuse_import(v8::Local<v8::Context> context, v8::Local<v8::Data>,
                                          v8::Local<v8::Value>, v8::Local<v8::String> specifier,
                                          v8::Local<v8::FixedArray>) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(context).ToLocal(&resolver)) return {};
  std::string message = "import('" + utf8(isolate, specifier) +
                        "') is not available in dorm's engine: there are no modules; call a tool instead";
  resolver->Reject(context, v8::Exception::Error(v8_string(isolate, message))).IsNothing();
  return resolver->GetPromise();
}

bool refuse_wasm(v8::Local<v8::Context>, v8::Local<v8::String>) { return false; }

void on_fatal_oom(const char* location, bool) { Slot::report_fatal_oom(location); }

// The host never sends a malformed or misplaced frame: one means the stream is not what it
// seems, and the process ends (the host then fails what it held here).
[[noreturn]] void fatal(const std::string& why) {
  std::fprintf(stderr, "dorm-engine-worker: %s\n", why.c_str());
  _exit(2);
}

}  // namespace

Slot::Slot(Channel& channel, v8::Platform& platform, PreparedCache& prepared,
           StartupSnapshot* snapshot, std::function<void(bool)> on_busy,
           const std::atomic<int>& busy_slots, std::chrono::microseconds poll_budget,
           std::chrono::milliseconds idle_trim)
    : channel_(channel),
      platform_(platform),
      prepared_(prepared),
      snapshot_(snapshot),
      on_busy_(std::move(on_busy)),
      busy_slots_(busy_slots),
      poll_policy_(poll_budget),
      idle_trim_(idle_trim) {}

void Slot::start() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kThreadStackBytes);
  if (pthread_create(&thread_, &attr, &Slot::thread_entry, this) != 0) _exit(71);
  pthread_attr_destroy(&attr);
}

void Slot::wait_warm() {
  std::unique_lock lock(start_mutex_);
  start_cv_.wait(lock, [&] { return warm_ready_; });
}

void Slot::serve() {
  {
    std::lock_guard lock(start_mutex_);
    serving_ = true;
  }
  start_cv_.notify_all();
}

void* Slot::thread_entry(void* self) {
  static_cast<Slot*>(self)->thread_main();
  return nullptr;
}

void Slot::thread_main() {
  t_slot = this;
  pthread_getcpuclockid(pthread_self(), &cpu_clock_);
  new_isolate(Limits{}.heap_bytes);
  make_warm();
  {
    std::unique_lock lock(start_mutex_);
    warm_ready_ = true;
    start_cv_.notify_all();
    start_cv_.wait(lock, [&] { return serving_; });
  }
  for (;;) {
    auto deadline = std::chrono::steady_clock::time_point::max();
    if (ran_since_trim_ && idle_trim_.count() > 0) deadline = std::chrono::steady_clock::now() + idle_trim_;
    auto input = next_input(deadline);
    if (std::holds_alternative<NoInput>(input)) {
      trim();
      continue;
    }
    auto* frame = std::get_if<SlotInput>(&input);
    // Inputs for an execution that already ended (a late tool result) are dropped here.
    if (frame == nullptr) continue;
    if (auto* start = std::get_if<wire::Start>(frame)) run(std::move(*start));
  }
}

std::variant<SlotInput, NoInput> Slot::next_input(std::chrono::steady_clock::time_point deadline,
                                                  std::chrono::microseconds poll_budget) {
  for (;;) {
    auto next = reader_.next();
    if (!next) fatal(next.error().message);
    if (next->has_frame) {
      auto message = wire::decode(next->body);
      if (!message) fatal(message.error().message);
      return std::visit(
          [&](auto&& m) -> std::variant<SlotInput, NoInput> {
            using T = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<T, wire::Start> || std::is_same_v<T, wire::ToolResult> ||
                          std::is_same_v<T, wire::TimerFired> || std::is_same_v<T, wire::Cancel>) {
              return SlotInput(std::move(m));
            } else {
              fatal("the host sent a slot a frame that is not for an execution");
            }
          },
          std::move(*message));
    }
    if (poll_budget.count() > 0) {
      // Once per wait; whatever it finds, the blocking path below reads it.
      pollfd fd{channel_.fd(), POLLIN, 0};
      poll_policy_.record(poll_briefly(&fd, 1, poll_budget, /*yield=*/true) > 0);
      poll_budget = {};
    }
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return NoInput{};
      pollfd fd{channel_.fd(), POLLIN, 0};
      int ready = ::poll(&fd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 60'000)));
      if (ready < 0 && errno != EINTR) fatal("poll failed on the slot's socket");
      if (ready <= 0) continue;
    }
    char buffer[1 << 14];
    ssize_t n = ::read(channel_.fd(), buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) _exit(0);  // the host closed the socket: nothing left to do
    reader_.feed(buffer, static_cast<std::size_t>(n));
  }
}

void Slot::new_isolate(std::uint64_t heap_bytes) {
  if (isolate_ != nullptr) {
    warm_.reset();
    preparer_.reset();
    isolate_->Dispose();
    isolate_ = nullptr;
  }
  budget_ = std::make_shared<ArrayBufferBudget>(heap_bytes);
  budget_->on_refused = [this](std::size_t length) {
    kill(FailureKind::memory_limit,
         "an ArrayBuffer of " + std::to_string(length) + " bytes would pass the memory limit of " +
             mib(budget_->limit) + " (heap_bytes)");
  };
  allocator_.reset(static_cast<v8::ArrayBuffer::Allocator*>(new_counting_array_buffer_allocator(budget_)));
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator_.get();
  if (snapshot_ != nullptr) {
    params.snapshot_blob = &snapshot_->blob;
    params.external_references = snapshot_->external_references.data();
  }
  // heap_bytes is enforced after each full collection (after_full_gc); V8's own limit, a
  // quarter higher, is the backstop (near_heap_limit) for a heap that grows past it
  // between two full collections.
  params.constraints.set_max_old_generation_size_in_bytes(heap_bytes + heap_bytes / 4);
  params.constraints.set_max_young_generation_size_in_bytes(std::min<std::uint64_t>(16u << 20, heap_bytes / 4));
  isolate_ = v8::Isolate::New(params);
  isolate_->SetData(kIsolateDataIndex, this);
  isolate_->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  isolate_->AddNearHeapLimitCallback(&Slot::near_heap_limit, this);
  isolate_->AddGCEpilogueCallback(&Slot::after_full_gc, this, v8::kGCTypeMarkSweepCompact);
  isolate_->SetOOMErrorHandler(&on_fatal_oom);
  isolate_->SetAllowAtomicsWait(false);
  isolate_->SetAllowWasmCodeGenerationCallback(&refuse_wasm);
  isolate_->SetHostImportModuleDynamicallyCallback(
      static_cast<v8::HostImportModuleDynamicallyCallback>(&refuse_import));
  heap_bytes_ = heap_bytes;
  isolate_spent_ = false;
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  preparer_ = snapshot_ != nullptr ? std::make_unique<SourcePreparer>(isolate_, snapshot_->preparer_context)
                                   : std::make_unique<SourcePreparer>(isolate_);
}

void Slot::make_warm() {
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  v8::Local<v8::Context> context;
  v8::Local<v8::Object> hooks;
  if (snapshot_ != nullptr && snapshot_->prelude) {
    // The prelude was applied once, when the snapshot was made: this context and its
    // hooks are a fresh copy of that one.
    context = prelude_context_from_snapshot(isolate_, *snapshot_->prelude, &hooks).ToLocalChecked();
  } else {
    context = v8::Context::New(isolate_);
    hooks = install_prelude(context, bridge()).ToLocalChecked();
  }
  v8::Context::Scope context_scope(context);
  Warm w;
  w.context.Reset(isolate_, context);
  w.init.Reset(isolate_, hooks->Get(context, v8_string(isolate_, "init")).ToLocalChecked().As<v8::Function>());
  w.fire.Reset(isolate_, hooks->Get(context, v8_string(isolate_, "fire")).ToLocalChecked().As<v8::Function>());
  warm_.emplace(std::move(w));
}

void Slot::run(wire::Start start) {
  ran_since_trim_ = true;
  if (start.limits.heap_bytes != heap_bytes_ || isolate_spent_) {
    new_isolate(start.limits.heap_bytes);
    make_warm();
  }
  on_busy_(true);
  Execution e;
  e.exec = start.exec;
  e.id = std::move(start.id);
  e.source = std::move(start.source);
  e.limits = start.limits;
  e.journal = std::move(start.journal);
  bool well_formed = index_journal(e);

  current_ = &e;
  const std::size_t array_buffers_at_start = budget_->used.load();
  arm_limits(e);
  Outcome outcome = run_in_context(e, well_formed);
  disarm_limits();
  // A termination requested for this execution may still be pending; it must not hit the
  // warm-up below or the next execution.
  isolate_->CancelTerminateExecution();
  current_ = nullptr;
  warm_.reset();  // the execution's context is never used again
  set_thread_host_time(NAN);
  channel_.send(outcome);
  // The outcome's write wakes the pool thread with a "sync" wake-up (as every write to a
  // Unix socket does), which tells the scheduler this thread is about to sleep, so the
  // pool thread is queued on this CPU. This thread goes on to make the next context
  // (~0.3 ms of CPU), and the pool thread, with the caller it would wake, waited behind
  // it: half of the executions here took 0.4-0.5 ms instead of 0.2. Yielding lets them
  // run first (docs/benchmarks.md, "Yielding after the outcome").
  sched_yield();
  ready_for_next(array_buffers_at_start);
}

bool Slot::index_journal(Execution& e) {
  for (const auto& entry : e.journal.entries) {
    if (auto* call = std::get_if<ToolCallEntry>(&entry)) {
      e.recorded_calls.push_back(call);
    } else if (auto* set = std::get_if<TimerSetEntry>(&entry)) {
      e.recorded_sets[set->timer] = set;
    } else if (auto* clear = std::get_if<TimerClearEntry>(&entry)) {
      e.recorded_clears.insert(clear->timer);
    } else {
      e.inputs.push_back(&entry);
    }
  }
  // Calls are numbered 1, 2, ... in the order the code makes them; a journal that says
  // otherwise was not written by this engine.
  bool well_formed = true;
  for (std::size_t i = 0; i < e.recorded_calls.size(); ++i) {
    if (e.recorded_calls[i]->seq != i + 1) well_formed = false;
  }
  return well_formed;
}

void Slot::arm_limits(const Execution& e) {
  {
    std::lock_guard lock(kill_mutex_);
    kill_.reset();
    running_ = true;
    cpu_start_ns_ = cpu_ns(cpu_clock_);
    cpu_limit_ms_ = e.limits.cpu_ms;
    cpu_limit_ns_ = static_cast<std::int64_t>(e.limits.cpu_ms) * 1'000'000;
    wall_limit_ms_ = e.limits.wall_ms;
  }
  set_wall_deadline(e);
  isolate_->CancelTerminateExecution();
}

void Slot::disarm_limits() {
  std::lock_guard lock(kill_mutex_);
  running_ = false;
  wall_deadline_ = std::chrono::steady_clock::time_point::max();
}

Slot::Outcome Slot::run_in_context(Execution& e, bool well_formed) {
  Outcome outcome;
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  // The stack limit counts from here: what the execution may use below this frame.
  char marker = 0;
  isolate_->SetStackLimit(reinterpret_cast<std::uintptr_t>(&marker) - e.limits.stack_bytes);
  v8::Local<v8::Context> context = warm_->context.Get(isolate_);
  v8::Local<v8::Function> init = warm_->init.Get(isolate_);
  v8::Context::Scope context_scope(context);
  set_thread_host_time(static_cast<double>(e.journal.start_ms));
  v8::Local<v8::Value> seed[] = {
      v8::Integer::NewFromUnsigned(isolate_, static_cast<std::uint32_t>(e.journal.seed >> 32)),
      v8::Integer::NewFromUnsigned(isolate_, static_cast<std::uint32_t>(e.journal.seed))};
  init->Call(context, v8::Undefined(isolate_), 2, seed).IsEmpty();
  if (!well_formed) {
    outcome = wire::Failed{e.exec, FailureKind::nondeterministic_replay,
                           "the journal's tool calls are not numbered 1, 2, 3, ..."};
  } else {
    outcome = execute(e, context);
  }
  e.outstanding.clear();
  return outcome;
}

// The contexts of finished executions are garbage in the isolate's heap until a full
// collection, and V8 keeps the pages it grew into; a slot that has gone quiet gives both
// back. Idle only, so no execution waits for it (one that arrives meanwhile waits at most
// one collection of a heap that holds little but the warm context and the preparer).
void Slot::trim() {
  ran_since_trim_ = false;
  {
    v8::Isolate::Scope isolate_scope(isolate_);
    isolate_->LowMemoryNotification();
  }
  malloc_trim(0);
}

void Slot::ready_for_next(std::size_t array_buffers_at_start) {
  // Off the request path: give ArrayBuffers of the finished context back before the next
  // execution is charged, and have the next context ready.
  if (isolate_spent_) {
    new_isolate(heap_bytes_);
  } else if (budget_->used.load() > array_buffers_at_start) {
    // The execution's ArrayBuffers are garbage now, but stay charged until a GC frees them;
    // collect so the next execution gets the whole budget. (The source preparer keeps a few
    // buffers of its own for good: they are the baseline, not garbage.)
    v8::Isolate::Scope isolate_scope(isolate_);
    isolate_->LowMemoryNotification();
  }
  make_warm();
  on_busy_(false);
  // The host prefers a slot that said so for the next start.
  channel_.send(wire::Ready{1});
}

void Slot::set_wall_deadline(const Execution& e) {
  std::lock_guard lock(kill_mutex_);
  // No deadline while a tool call is outstanding: a tool may be waiting for a person.
  wall_deadline_ = e.outstanding.empty()
                       ? std::chrono::steady_clock::now() + std::chrono::milliseconds(e.limits.wall_ms)
                       : std::chrono::steady_clock::time_point::max();
}

void Slot::kill(FailureKind kind, std::string message) {
  std::lock_guard lock(kill_mutex_);
  if (!running_ || kill_) return;
  kill_.emplace(kind, std::move(message));
  isolate_->TerminateExecution();
}

std::optional<Slot::Outcome> Slot::killed() {
  std::lock_guard lock(kill_mutex_);
  if (!kill_) return std::nullopt;
  return wire::Failed{current_->exec, kill_->first, kill_->second};
}

bool Slot::check_limits(std::chrono::steady_clock::time_point now) {
  std::unique_lock lock(kill_mutex_);
  if (!running_ || kill_) return running_;
  if (cpu_ns(cpu_clock_) - cpu_start_ns_ >= cpu_limit_ns_) {
    lock.unlock();
    kill(FailureKind::cpu_limit, "the execution used more than its CPU time limit of " +
                                     std::to_string(cpu_limit_ms_) + " ms (cpu_ms)");
  } else if (now >= wall_deadline_) {
    lock.unlock();
    kill(FailureKind::wall_limit, "the execution ran longer than its wall time limit of " +
                                      std::to_string(wall_limit_ms_) +
                                      " ms (wall_ms; time waiting for tools is not counted)");
  }
  return true;
}

void Slot::after_full_gc(v8::Isolate* isolate, v8::GCType, v8::GCCallbackFlags, void* data) {
  // What a full collection leaves is live: at or over heap_bytes, the execution is over its
  // limit now. Waiting for V8's own limit instead cost a memory bomb its slowest part: near
  // that limit V8 collects again and again, each time marking the whole heap, before it
  // calls near_heap_limit (a bomb of 1 KiB strings took 650-700 ms to end at 64 MiB, and
  // 330-370 ms this way; docs/benchmarks.md, Engine).
  auto* self = static_cast<Slot*>(data);
  if (self->current_ == nullptr || self->isolate_spent_) return;
  v8::HeapStatistics stats;
  isolate->GetHeapStatistics(&stats);
  if (stats.used_heap_size() < self->heap_bytes_) return;
  self->end_over_heap_limit();
}

void Slot::end_over_heap_limit() {
  isolate_spent_ = true;  // its heap is full of the execution's objects: replace it
  kill(FailureKind::memory_limit,
       "the execution passed its memory limit of " + mib(heap_bytes_) + " (heap_bytes)");
}

std::size_t Slot::near_heap_limit(void* data, std::size_t current, std::size_t) {
  auto* self = static_cast<Slot*>(data);
  self->end_over_heap_limit();
  // Returning the same limit aborts the process; a larger one lets the termination unwind.
  v8::HeapStatistics stats;
  self->isolate_->GetHeapStatistics(&stats);
  return std::max(current, stats.used_heap_size()) + (64u << 20);
}

void Slot::report_fatal_oom(const char* location) {
  // The isolate that ran out tells which slot it was; V8 may call this on a thread of its own.
  v8::Isolate* isolate = v8::Isolate::TryGetCurrent();
  Slot* self =
      isolate != nullptr ? static_cast<Slot*>(isolate->GetData(kIsolateDataIndex)) : t_slot;
  if (self == nullptr) self = t_slot;
  if (self != nullptr) {
    // First, so the host starts nothing more here once it sees the failure below.
    self->channel_.try_send(wire::Exiting{std::string("V8 ran out of memory in ") + (location ? location : "?")});
  }
  if (self != nullptr && self->current_ != nullptr) {
    self->channel_.try_send(wire::Failed{
        self->current_->exec, FailureKind::memory_limit,
        "the execution passed its memory limit of " + mib(self->heap_bytes_) +
            " (heap_bytes) in a single allocation V8 could not stop (" +
            std::string(location ? location : "?") + "); its engine worker restarted"});
  }
  _exit(70);
}

void Slot::drain() {
  isolate_->PerformMicrotaskCheckpoint();
  while (v8::platform::PumpMessageLoop(&platform_, isolate_)) {
  }
}

Slot::Outcome Slot::execute(Execution& e, v8::Local<v8::Context> context) {
  v8::TryCatch try_catch(isolate_);
  std::string body;
  if (auto known = prepared_.find(e.source)) {
    body = std::move(*known);
  } else {
    auto prepared = preparer_->prepare(e.source);
    if (auto* error = std::get_if<SourceError>(&prepared)) {
      if (auto out = killed()) return *out;
      return wire::Failed{e.exec, FailureKind::syntax_error,
                          "SyntaxError: " + error->message + " (line " + std::to_string(error->line) +
                              ", column " + std::to_string(error->column) + ")"};
    }
    body = std::move(std::get<PreparedSource>(prepared).body);
    prepared_.insert(e.source, body);
  }
  if (auto out = killed()) return *out;
  std::string wrapped = "(async () => {\"use strict\";\n" + body + "\n})()";
  // Line 1 of the body is line 1 of the script, so error lines point into the user's code.
  v8::ScriptOrigin origin(isolate_, v8_string(isolate_, "execute"), -1, 0);
  v8::Local<v8::Script> script;
  if (!v8::Script::Compile(context, v8_string(isolate_, wrapped), &origin).ToLocal(&script)) {
    if (auto out = killed()) return *out;
    v8::Local<v8::Message> message = try_catch.Message();
    std::string text = message.IsEmpty() ? "SyntaxError" : utf8(isolate_, message->Get());
    if (text.starts_with("Uncaught ")) text.erase(0, 9);
    int line = message.IsEmpty() ? 0 : message->GetLineNumber(context).FromMaybe(0);
    int column = message.IsEmpty() ? 0 : message->GetStartColumn(context).FromMaybe(0) + 1;
    return wire::Failed{e.exec, FailureKind::syntax_error,
                        text + " (line " + std::to_string(line) + ", column " + std::to_string(column) + ")"};
  }
  v8::Local<v8::Value> value;
  bool ran = script->Run(context).ToLocal(&value);
  drain();
  if (auto out = killed()) return *out;
  if (!ran || !value->IsPromise()) {
    return fail_with_exception(e, context, try_catch.HasCaught() ? try_catch.Exception()
                                                                  : v8::Local<v8::Value>(v8::Undefined(isolate_)));
  }
  v8::Local<v8::Promise> promise = value.As<v8::Promise>();
  for (;;) {
    if (auto out = killed()) return *out;
    if (auto out = settle(e, context, promise)) return *out;
    if (e.replaying()) {
      if (auto out = next_replay_input(e, context)) return *out;
      continue;
    }
    // Live: wait for the host. With no tool call outstanding the wall deadline applies here
    // too (a promise that never settles ends at the wall limit).
    std::chrono::steady_clock::time_point deadline;
    {
      std::lock_guard lock(kill_mutex_);
      deadline = wall_deadline_;
    }
    auto next = next_input(deadline, poll_policy_.next(busy_slots_.load(std::memory_order_relaxed) <= 1));
    auto* input = std::get_if<SlotInput>(&next);
    if (input == nullptr) {
      kill(FailureKind::wall_limit, "the execution ran longer than its wall time limit of " +
                                        std::to_string(e.limits.wall_ms) +
                                        " ms (wall_ms; time waiting for tools is not counted)");
      continue;
    }
    if (std::holds_alternative<wire::Start>(*input)) {
      fatal("the host started an execution on a busy slot");
    }
    if (auto* cancel = std::get_if<wire::Cancel>(input)) {
      if (cancel->exec == e.exec) kill(FailureKind::cancelled, "the execution was cancelled");
      continue;
    }
    if (auto* result = std::get_if<wire::ToolResult>(input)) {
      if (result->exec != e.exec || e.outstanding.count(result->result.seq) == 0) continue;
      if (auto out = deliver(e, context, result->result)) return *out;
    } else if (auto* fired = std::get_if<wire::TimerFired>(input)) {
      if (fired->exec != e.exec || e.timers.count(fired->fired.timer) == 0) continue;
      if (auto out = deliver(e, context, fired->fired)) return *out;
    }
  }
}

std::optional<Slot::Outcome> Slot::next_replay_input(Execution& e, v8::Local<v8::Context> context) {
  const JournalEntry& input = *e.inputs[e.next_input];
  std::size_t number = e.next_input + 1;
  if (auto* result = std::get_if<ToolResultEntry>(&input)) {
    if (e.outstanding.count(result->seq) == 0) {
      return wire::Failed{e.exec, FailureKind::nondeterministic_replay,
                          "replay diverged at journal input " + std::to_string(number) +
                              ": it is the result of tool call " + std::to_string(result->seq) +
                              ", but the code is not waiting for that call (it has made " +
                              std::to_string(e.calls_made) + " calls)"};
    }
  } else if (auto* fired = std::get_if<TimerFiredEntry>(&input)) {
    if (e.timers.count(fired->timer) == 0) {
      return wire::Failed{e.exec, FailureKind::nondeterministic_replay,
                          "replay diverged at journal input " + std::to_string(number) +
                              ": timer " + std::to_string(fired->timer) + " fires, but the code has no such timer pending"};
    }
  }
  ++e.next_input;
  if (auto out = deliver(e, context, input)) return out;
  if (!e.replaying() && e.calls_made < e.recorded_calls.size()) {
    return wire::Failed{e.exec, FailureKind::nondeterministic_replay,
                        "replay diverged: the journal has " + std::to_string(e.recorded_calls.size()) +
                            " tool calls but the code made only " + std::to_string(e.calls_made)};
  }
  return std::nullopt;
}

std::optional<Slot::Outcome> Slot::deliver(Execution& e, v8::Local<v8::Context> context,
                                           const JournalEntry& input) {
  v8::HandleScope handles(isolate_);
  v8::TryCatch try_catch(isolate_);
  if (auto* result = std::get_if<ToolResultEntry>(&input)) {
    set_thread_host_time(static_cast<double>(result->time_ms));
    auto node = e.outstanding.find(result->seq);
    v8::Local<v8::Promise::Resolver> resolver = node->second.Get(isolate_);
    e.outstanding.erase(node);
    set_wall_deadline(e);
    if (result->ok) {
      // The prelude parses the text on its side (`.then(parse)`).
      resolver->Resolve(context, v8_string(isolate_, result->value_json)).IsNothing();
    } else {
      // A failed call rejects with an Error whose message is the JSON string the host sent.
      v8::TryCatch parse_catch(isolate_);
      v8::Local<v8::Value> value;
      std::string message = v8::JSON::Parse(context, v8_string(isolate_, result->value_json)).ToLocal(&value) &&
                                    value->IsString()
                                ? utf8(isolate_, value)
                                : result->value_json;
      resolver->Reject(context, v8::Exception::Error(v8_string(isolate_, message))).IsNothing();
    }
  } else if (auto* fired = std::get_if<TimerFiredEntry>(&input)) {
    set_thread_host_time(static_cast<double>(fired->time_ms));
    e.timers.erase(fired->timer);
    v8::Local<v8::Value> argv[] = {v8::Integer::NewFromUnsigned(isolate_, fired->timer)};
    warm_->fire.Get(isolate_)->Call(context, v8::Undefined(isolate_), 1, argv).IsEmpty();
  }
  if (try_catch.HasCaught() && !try_catch.HasTerminated()) {
    // A setTimeout callback threw and nothing caught it: the execution fails, as an
    // uncaught exception would end a Node process.
    if (auto out = killed()) return out;
    return fail_with_exception(e, context, try_catch.Exception());
  }
  drain();
  return std::nullopt;
}

std::optional<Slot::Outcome> Slot::settle(Execution& e, v8::Local<v8::Context> context,
                                          v8::Local<v8::Promise> promise) {
  switch (promise->State()) {
    case v8::Promise::kPending: return std::nullopt;
    case v8::Promise::kRejected: return fail_with_exception(e, context, promise->Result());
    case v8::Promise::kFulfilled: break;
  }
  if (e.replaying()) {
    return wire::Failed{e.exec, FailureKind::nondeterministic_replay,
                        "replay diverged: the code finished with " +
                            std::to_string(e.inputs.size() - e.next_input) +
                            " journal inputs left to deliver"};
  }
  v8::TryCatch try_catch(isolate_);
  v8::Local<v8::Value> value = promise->Result();
  std::string json = "null";
  if (!value->IsUndefined()) {
    v8::Local<v8::String> text;
    if (!v8::JSON::Stringify(context, value).ToLocal(&text)) {
      if (auto out = killed()) return *out;
      std::string why = try_catch.HasCaught() ? utf8(isolate_, try_catch.Exception()) : "not JSON";
      return wire::Failed{e.exec, FailureKind::runtime_error, "the result is not JSON-serialisable: " + why};
    }
    json = utf8(isolate_, text);
    if (json == "undefined") json = "null";
  }
  if (auto out = killed()) return *out;
  if (e.output_bytes + json.size() > e.limits.output_bytes) {
    return wire::Failed{e.exec, FailureKind::output_limit,
                        "the result of " + std::to_string(json.size()) + " bytes passes the output limit of " +
                            mib(e.limits.output_bytes) + " (output_bytes, emitted values included)"};
  }
  return wire::Completed{e.exec, std::move(json)};
}

Slot::Outcome Slot::fail_with_exception(Execution& e, v8::Local<v8::Context> context,
                                        v8::Local<v8::Value> exception) {
  v8::TryCatch try_catch(isolate_);
  std::string text = "[exception]";
  v8::Local<v8::String> as_string;
  if (exception->ToString(context).ToLocal(&as_string)) text = utf8(isolate_, as_string);
  if (auto out = killed()) return *out;
  if (exception->IsNativeError() && text == "RangeError: Maximum call stack size exceeded") {
    return wire::Failed{e.exec, FailureKind::stack_limit,
                        "the execution overflowed its stack limit of " + mib(e.limits.stack_bytes) +
                            " (stack_bytes): " + text};
  }
  v8::Local<v8::Message> message = v8::Exception::CreateMessage(isolate_, exception);
  int line = message.IsEmpty() ? 0 : message->GetLineNumber(context).FromMaybe(0);
  if (line > 0) {
    int column = message->GetStartColumn(context).FromMaybe(0) + 1;
    text += " (line " + std::to_string(line) + ", column " + std::to_string(column) + ")";
  }
  return wire::Failed{e.exec, FailureKind::runtime_error, std::move(text)};
}

}  // namespace dorm::engine::sandbox
