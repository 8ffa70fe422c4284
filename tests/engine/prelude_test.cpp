// The prelude (engine/src/sandbox/prelude.cpp) applied two ways: run in a fresh context, as a
// slot does without a startup snapshot, and deserialised from a snapshot that holds a
// context with it applied, as every execution's context is made in a worker. User code
// must not be able to tell them apart, and contexts made from the snapshot share nothing.
// This process runs V8 with its default flags, under which V8 adds WebAssembly and shared
// memory to every context, deserialised ones included: both ways must remove them.
#include "prelude.hpp"
#include "startup_snapshot.hpp"

#include <doctest/doctest.h>
#include <v8.h>

#include <memory>
#include <string>

#include "dorm/engine/v8_process.hpp"

namespace {

using dorm::engine::sandbox::BridgeFunction;
using dorm::engine::sandbox::StartupSnapshot;

// The bridge is never called here: what is compared is what user code can see before it
// calls anything, so the callbacks only need distinct addresses.
void call_noop(const v8::FunctionCallbackInfo<v8::Value>&) {}
void log_noop(const v8::FunctionCallbackInfo<v8::Value>&) {}
void emit_noop(const v8::FunctionCallbackInfo<v8::Value>&) {}
void timer_set_noop(const v8::FunctionCallbackInfo<v8::Value>&) {}
void timer_clear_noop(const v8::FunctionCallbackInfo<v8::Value>&) {}
const BridgeFunction kBridge[] = {{"call", &call_noop},
                                  {"log", &log_noop},
                                  {"emit", &emit_noop},
                                  {"timerSet", &timer_set_noop},
                                  {"timerClear", &timer_clear_noop}};

// What a script sees of its globals, as JSON: every own global name, what the prelude
// defines and removes, how `tools` answers, and the first numbers Math.random draws after
// init with seed (7, 9).
const char kSurvey[] = R"JS((() => {
  const g = globalThis;
  const attempt = (f) => { try { return ['ok', String(f())]; } catch (e) { return [e.constructor.name, e.message]; } };
  const names = Object.getOwnPropertyNames(g).sort();
  const described = {};
  for (const name of ['console', 'emit', 'tools', 'fetch', 'setTimeout', 'clearTimeout']) {
    const d = Object.getOwnPropertyDescriptor(g, name);
    described[name] = d && [typeof d.value, d.writable, d.enumerable, d.configurable];
  }
  return JSON.stringify({
    names,
    described,
    gone: [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof require, typeof process],
    consoleKeys: Object.getOwnPropertyNames(console).sort(),
    consoleFrozen: Object.isFrozen(console),
    thenable: [typeof tools.then, typeof tools.a.then, typeof tools.a.b],
    listing: attempt(() => Object.keys(tools)),
    bareCall: attempt(() => tools()),
    fetching: attempt(() => fetch('https://example.com')),
    random: [Math.random(), Math.random(), Math.random()],
    randomOwn: Object.getOwnPropertyDescriptor(Math, 'random').writable,
  });
})())JS";

class Isolate {
 public:
  explicit Isolate(StartupSnapshot* snapshot) {
    dorm::engine::v8_platform();
    allocator_.reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
    v8::Isolate::CreateParams params;
    params.array_buffer_allocator = allocator_.get();
    if (snapshot != nullptr) {
      params.snapshot_blob = &snapshot->blob;
      params.external_references = snapshot->external_references.data();
    }
    isolate_ = v8::Isolate::New(params);
  }
  ~Isolate() { isolate_->Dispose(); }
  Isolate(const Isolate&) = delete;
  Isolate& operator=(const Isolate&) = delete;
  v8::Isolate* get() const { return isolate_; }

 private:
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_;
};

std::string to_utf8(v8::Isolate* isolate, v8::Local<v8::Value> value) {
  v8::String::Utf8Value text(isolate, value);
  return *text != nullptr ? std::string(*text, static_cast<std::size_t>(text.length())) : std::string();
}

// Inits the context's hooks with seed (7, 9), runs `script` and returns its value as text
// (or "threw: ..." ).
std::string run(v8::Isolate* isolate, v8::Local<v8::Context> context, v8::Local<v8::Object> hooks,
                const char* script) {
  v8::Context::Scope context_scope(context);
  v8::TryCatch try_catch(isolate);
  auto init = hooks->Get(context, v8::String::NewFromUtf8Literal(isolate, "init")).ToLocalChecked();
  REQUIRE(init->IsFunction());
  v8::Local<v8::Value> seed[] = {v8::Integer::New(isolate, 7), v8::Integer::New(isolate, 9)};
  REQUIRE_FALSE(init.As<v8::Function>()->Call(context, v8::Undefined(isolate), 2, seed).IsEmpty());
  v8::Local<v8::Value> value;
  auto source = v8::String::NewFromUtf8(isolate, script).ToLocalChecked();
  if (!v8::Script::Compile(context, source).ToLocalChecked()->Run(context).ToLocal(&value)) {
    return "threw: " + to_utf8(isolate, try_catch.Exception());
  }
  return to_utf8(isolate, value);
}

struct Survey {
  std::string first, second;
};

// The survey in two contexts of one isolate made from the snapshot's prelude context; the
// first context also sets a global, which the second must not see.
Survey survey_from_snapshot(StartupSnapshot& snapshot, const char* script) {
  Isolate isolate(&snapshot);
  v8::Isolate::Scope isolate_scope(isolate.get());
  v8::HandleScope handles(isolate.get());
  Survey out;
  for (std::string* into : {&out.first, &out.second}) {
    v8::Local<v8::Object> hooks;
    auto context = dorm::engine::sandbox::prelude_context_from_snapshot(isolate.get(), *snapshot.prelude, &hooks)
                       .ToLocalChecked();
    *into = run(isolate.get(), context, hooks, script);
    run(isolate.get(), context, hooks, "globalThis.leftBehind = 1; setTimeout(() => {}, 5)");
  }
  return out;
}

std::string survey_in_place(const char* script) {
  Isolate isolate(nullptr);
  v8::Isolate::Scope isolate_scope(isolate.get());
  v8::HandleScope handles(isolate.get());
  auto context = v8::Context::New(isolate.get());
  v8::Local<v8::Object> hooks;
  REQUIRE(dorm::engine::sandbox::install_prelude(context, kBridge).ToLocal(&hooks));
  return run(isolate.get(), context, hooks, script);
}

std::unique_ptr<StartupSnapshot> build(std::span<const BridgeFunction> bridge) {
  dorm::engine::v8_platform();
  return dorm::engine::sandbox::build_startup_snapshot(bridge);
}

}  // namespace

TEST_CASE("prelude: a context from the snapshot looks to user code exactly like one with the prelude run in it") {
  auto snapshot = build(kBridge);
  REQUIRE(snapshot != nullptr);
  REQUIRE(snapshot->prelude.has_value());
  CHECK(snapshot->external_references.size() == std::size(kBridge) + 1);
  CHECK(snapshot->external_references.back() == 0);

  std::string in_place = survey_in_place(kSurvey);
  Survey from_snapshot = survey_from_snapshot(*snapshot, kSurvey);
  INFO("in place: " << in_place);
  // The survey itself says something: the prelude's globals are there and the removed ones
  // are gone (so equality below is not two empty answers).
  CHECK(in_place.find("\"tools\"") != std::string::npos);
  CHECK(in_place.find("\"gone\":[\"undefined\",\"undefined\",\"undefined\",\"undefined\",\"undefined\"]") !=
        std::string::npos);
  CHECK(in_place.find("\"listing\":[\"TypeError\",\"tools cannot be listed") != std::string::npos);
  CHECK(in_place.find("\"fetching\":[\"Error\",\"fetch is disabled in dorm's engine") != std::string::npos);
  CHECK(from_snapshot.first == in_place);
  // The second context did not inherit the first one's global or its timer counter.
  CHECK(from_snapshot.second == in_place);
}

TEST_CASE("prelude: contexts from the snapshot keep their own timers and random state") {
  auto snapshot = build(kBridge);
  REQUIRE(snapshot != nullptr);
  // setTimeout returns the context's next timer id: 1 in every fresh context, whatever
  // an earlier context from the same snapshot did.
  Survey ids = survey_from_snapshot(*snapshot, "[typeof leftBehind, setTimeout(() => {}, 1), setTimeout(() => {}, 1)].join()");
  CHECK(ids.first == "undefined,1,2");
  CHECK(ids.second == "undefined,1,2");
}

TEST_CASE("prelude: a snapshot made without a bridge has no prelude context") {
  auto snapshot = build({});
  REQUIRE(snapshot != nullptr);
  CHECK_FALSE(snapshot->prelude.has_value());
  CHECK(snapshot->external_references.size() == 1);
}

