// V8 10.2 from Debian's libnode: one platform per process, isolates on separate threads,
// scripts whose results come back as JSON, and script errors with message and line.
#include <doctest/doctest.h>
#include <v8.h>

#include <memory>
#include <string>
#include <thread>

#include "dorm/engine/array_buffer_budget.hpp"
#include "dorm/engine/v8_process.hpp"

namespace {

struct ScriptOutcome {
  bool ok = false;
  std::string json;     // JSON.stringify of the completion value, when ok
  std::string message;  // the exception's message, when not ok
  int line = 0;         // the line the exception was thrown on, when not ok
};

// Runs `source` in a fresh isolate and context on the calling thread.
ScriptOutcome run_in_new_isolate(const std::string& source) {
  dorm::engine::v8_platform();
  auto budget = std::make_shared<dorm::engine::ArrayBufferBudget>(16 << 20);
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator(
      static_cast<v8::ArrayBuffer::Allocator*>(
          dorm::engine::new_counting_array_buffer_allocator(budget)));
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator.get();
  v8::Isolate* isolate = v8::Isolate::New(params);
  ScriptOutcome out;
  {
    v8::Isolate::Scope isolate_scope(isolate);
    v8::HandleScope handle_scope(isolate);
    v8::Local<v8::Context> context = v8::Context::New(isolate);
    v8::Context::Scope context_scope(context);
    v8::TryCatch try_catch(isolate);
    v8::Local<v8::String> code =
        v8::String::NewFromUtf8(isolate, source.c_str()).ToLocalChecked();
    v8::Local<v8::Script> script;
    v8::Local<v8::Value> result;
    if (v8::Script::Compile(context, code).ToLocal(&script) &&
        script->Run(context).ToLocal(&result)) {
      v8::Local<v8::String> json;
      if (v8::JSON::Stringify(context, result).ToLocal(&json)) {
        out.ok = true;
        out.json = *v8::String::Utf8Value(isolate, json);
      }
    } else {
      v8::Local<v8::Message> message = try_catch.Message();
      out.message = *v8::String::Utf8Value(isolate, message->Get());
      out.line = message->GetLineNumber(context).FromMaybe(0);
    }
  }
  isolate->Dispose();
  return out;
}

}  // namespace

TEST_CASE("v8: two isolates on two threads each run a script and return JSON") {
  ScriptOutcome a, b;
  std::thread ta([&] { a = run_in_new_isolate("({thread: 'a', sum: [1,2,3].reduce((x,y)=>x+y)})"); });
  std::thread tb([&] { b = run_in_new_isolate("JSON.parse('[1,{\"n\":null}]').concat(['b'])"); });
  ta.join();
  tb.join();
  REQUIRE(a.ok);
  CHECK(a.json == R"({"thread":"a","sum":6})");
  REQUIRE(b.ok);
  CHECK(b.json == R"([1,{"n":null},"b"])");
}

TEST_CASE("v8: a script that throws reports its message and line") {
  ScriptOutcome out = run_in_new_isolate("let x = 1;\nlet y = 2;\nthrow new Error('boom at three');");
  REQUIRE_FALSE(out.ok);
  CHECK(out.message == "Uncaught Error: boom at three");
  CHECK(out.line == 3);
}

TEST_CASE("v8: ArrayBuffers are charged to the budget and refused past it") {
  dorm::engine::v8_platform();
  auto budget = std::make_shared<dorm::engine::ArrayBufferBudget>(1 << 20);
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator(static_cast<v8::ArrayBuffer::Allocator*>(
      dorm::engine::new_counting_array_buffer_allocator(budget)));
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator.get();
  v8::Isolate* isolate = v8::Isolate::New(params);
  {
    v8::Isolate::Scope isolate_scope(isolate);
    v8::HandleScope handle_scope(isolate);
    v8::Local<v8::Context> context = v8::Context::New(isolate);
    v8::Context::Scope context_scope(context);
    auto run = [&](const char* src) {
      v8::TryCatch try_catch(isolate);
      auto script = v8::Script::Compile(
          context, v8::String::NewFromUtf8(isolate, src).ToLocalChecked()).ToLocalChecked();
      v8::Local<v8::Value> result;
      if (!script->Run(context).ToLocal(&result)) {
        return std::string("threw: ") +
               *v8::String::Utf8Value(isolate, try_catch.Message()->Get());
      }
      return std::string(*v8::String::Utf8Value(isolate, result));
    };
    CHECK(run("globalThis.kept = new ArrayBuffer(512 * 1024); kept.byteLength") == "524288");
    CHECK(budget->used.load() >= 512 * 1024);
    std::string refused = run("new ArrayBuffer(768 * 1024).byteLength");
    CHECK(refused.starts_with("threw: Uncaught RangeError"));
  }
  isolate->Dispose();
  CHECK(budget->used.load() == 0);  // every backing store was returned on dispose
}
