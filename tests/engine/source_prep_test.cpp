// Source preparation (engine/js/prepare.js through sandbox::SourcePreparer): each shape of
// model-written code becomes a body whose value, run in a fresh V8 context the way a worker
// runs it, is the expected result; syntax errors point into the text the model wrote.
#include "prepared_cache.hpp"
#include "source_prep.hpp"
#include "startup_snapshot.hpp"

#include <doctest/doctest.h>
#include <v8.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "dorm/engine/v8_process.hpp"

namespace {

using dorm::engine::sandbox::PreparedCache;
using dorm::engine::sandbox::PreparedSource;
using dorm::engine::sandbox::SourceError;
using dorm::engine::sandbox::SourcePreparer;

struct RunOutcome {
  bool fulfilled = false;
  std::string json;     // JSON.stringify of the resolved value, when fulfilled
  std::string message;  // the rejection's message, when not
  int line = 0;         // the line the rejection was thrown on, in the model's source
};

// One isolate with a preparer, as a worker slot holds them.
class Sandbox {
 public:
  // With `snapshot`, the isolate starts from it and the preparer comes out of it, as in a
  // worker; without, the preparer compiles the bundle in place.
  explicit Sandbox(dorm::engine::sandbox::StartupSnapshot* snapshot = nullptr) {
    dorm::engine::v8_platform();
    allocator_.reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
    v8::Isolate::CreateParams params;
    params.array_buffer_allocator = allocator_.get();
    if (snapshot != nullptr) params.snapshot_blob = &snapshot->blob;
    isolate_ = v8::Isolate::New(params);
    isolate_->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
    v8::Isolate::Scope isolate_scope(isolate_);
    auto started = std::chrono::steady_clock::now();
    preparer_ = snapshot != nullptr
                    ? std::make_unique<SourcePreparer>(isolate_, snapshot->preparer_context)
                    : std::make_unique<SourcePreparer>(isolate_);
    construction_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
  }
  ~Sandbox() {
    {
      v8::Isolate::Scope isolate_scope(isolate_);
      preparer_.reset();
    }
    isolate_->Dispose();
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  std::variant<PreparedSource, SourceError> prepare(std::string_view source) {
    v8::Isolate::Scope isolate_scope(isolate_);
    return preparer_->prepare(source);
  }

  // Prepares `source`, which must succeed, and runs the body.
  RunOutcome prepare_and_run(std::string_view source) {
    auto prepared = prepare(source);
    if (auto* error = std::get_if<SourceError>(&prepared)) {
      FAIL("unexpected SourceError: " << error->message << " at " << error->line << ":"
                                      << error->column);
    }
    return run(std::get<PreparedSource>(prepared).body);
  }

  // Runs `body` in a fresh context as `(async () => { "use strict";\n<body>\n})()`, with the
  // wrapper's first line at line 0 so that the body's lines are the model's lines, then
  // drains microtasks and reads the promise.
  RunOutcome run(const std::string& body) {
    v8::Isolate::Scope isolate_scope(isolate_);
    v8::HandleScope handles(isolate_);
    v8::Local<v8::Context> context = v8::Context::New(isolate_);
    v8::Context::Scope context_scope(context);
    v8::TryCatch try_catch(isolate_);
    std::string wrapped = "(async () => { \"use strict\";\n" + body + "\n})()";
    v8::ScriptOrigin origin(isolate_, v8::String::NewFromUtf8Literal(isolate_, "execute.js"), -1);
    v8::Local<v8::Script> script;
    v8::Local<v8::Value> value;
    RunOutcome out;
    if (!v8::Script::Compile(
             context, v8::String::NewFromUtf8(isolate_, wrapped.c_str()).ToLocalChecked(), &origin)
             .ToLocal(&script) ||
        !script->Run(context).ToLocal(&value)) {
      out.message = "did not compile: " +
                    std::string(*v8::String::Utf8Value(isolate_, try_catch.Message()->Get()));
      out.line = try_catch.Message()->GetLineNumber(context).FromMaybe(0);
      return out;
    }
    isolate_->PerformMicrotaskCheckpoint();
    REQUIRE(value->IsPromise());
    auto promise = value.As<v8::Promise>();
    if (promise->State() == v8::Promise::kFulfilled) {
      out.fulfilled = true;
      v8::Local<v8::Value> result = promise->Result();
      v8::Local<v8::String> json;
      if (!result->IsUndefined() && v8::JSON::Stringify(context, result).ToLocal(&json)) {
        out.json = *v8::String::Utf8Value(isolate_, json);
      } else {
        out.json = "undefined";
      }
    } else if (promise->State() == v8::Promise::kRejected) {
      v8::Local<v8::Message> message = v8::Exception::CreateMessage(isolate_, promise->Result());
      out.message = *v8::String::Utf8Value(isolate_, message->Get());
      out.line = message->GetLineNumber(context).FromMaybe(0);
    } else {
      out.message = "still pending";
    }
    return out;
  }

  double construction_ms() const { return construction_ms_; }

 private:
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_ = nullptr;
  std::unique_ptr<SourcePreparer> preparer_;
  double construction_ms_ = 0;
};

// The value `source` resolves to, as JSON.
std::string value_of(Sandbox& sandbox, std::string_view source) {
  RunOutcome out = sandbox.prepare_and_run(source);
  INFO("rejected: " << out.message << " (line " << out.line << ")");
  REQUIRE(out.fulfilled);
  return out.json;
}

SourceError error_of(Sandbox& sandbox, std::string_view source) {
  auto prepared = sandbox.prepare(source);
  if (auto* body = std::get_if<PreparedSource>(&prepared)) {
    FAIL("unexpectedly prepared: " << body->body);
  }
  return std::get<SourceError>(prepared);
}

}  // namespace

TEST_CASE("source_prep: a plain body with top-level await and return") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "const xs = [1, 2, 3];\n"
                 "const more = await Promise.resolve(4);\n"
                 "return xs.concat(more).map((x) => x * 2);") == "[2,4,6,8]");
  CHECK(value_of(sandbox, "const x = 1;") == "undefined");
  CHECK(value_of(sandbox, "") == "undefined");
}

TEST_CASE("source_prep: a fenced ts block with annotations, an interface and `as`") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "```ts\n"
                 "interface Point { x: number; y: number }\n"
                 "type Pair = [string, number];\n"
                 "const p: Point = JSON.parse('{\"x\": 3, \"y\": 4}') as Point;\n"
                 "const pair: Pair = ['len', Math.hypot(p.x, p.y)];\n"
                 "function label(name: string, n?: number): string { return `${name}=${n}`; }\n"
                 "return label(pair[0], pair[1] as number);\n"
                 "```") == "\"len=5\"");
}

TEST_CASE("source_prep: a fenced block amid prose reports errors at the prose's lines") {
  Sandbox sandbox;
  const char* source =
      "Sure! Here is the code:\n"  // line 1
      "\n"                         // line 2
      "```javascript\n"            // line 3
      "const total = 1;\n"         // line 4
      "if (total > 0 {\n"          // line 5: missing ')'
      "  return total;\n"
      "}\n"
      "```\n"
      "It returns the total.\n";
  SourceError error = error_of(sandbox, source);
  CHECK(error.message == "Unexpected token");
  CHECK(error.line == 5);
  CHECK(error.column == 15);  // the '{'

  // The same prose around valid code: the value, and a runtime error's line in the prose's
  // numbering (the body keeps the lines of the text above the fence).
  CHECK(value_of(sandbox, "Try this:\n```js\nreturn 'ok';\n```\nDone.") == "\"ok\"");
  RunOutcome thrown = sandbox.prepare_and_run(
      "Some prose.\n"
      "More prose.\n"
      "```ts\n"
      "const n: number = 1;\n"
      "throw new Error(`boom ${n}`);\n"  // line 5
      "```\n");
  CHECK_FALSE(thrown.fulfilled);
  CHECK(thrown.message == "Uncaught Error: boom 1");
  CHECK(thrown.line == 5);
}

TEST_CASE("source_prep: a lone arrow function is called and awaited") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "async () => {\n"
                 "  const n = await Promise.resolve(20);\n"
                 "  return {n: n + 1};\n"
                 "}") == "{\"n\":21}");
  CHECK(value_of(sandbox, "() => 42;") == "42");
  CHECK(value_of(sandbox, "// comment first\n(async (): Promise<string> => 'typed')") ==
        "\"typed\"");
}

TEST_CASE("source_prep: a lone async function expression is called and awaited") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "async function () {\n"
                 "  await null;\n"
                 "  return {done: true};\n"
                 "}") == "{\"done\":true}");
  CHECK(value_of(sandbox, "async function (limit: number = 2) { return limit * 2 };") == "4");
}

TEST_CASE("source_prep: a named function declaration is called and awaited") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "async function main() {\n"
                 "  const parts = ['a', 'b'];\n"
                 "  return parts.join('+');\n"
                 "}") == "\"a+b\"");
  CHECK(value_of(sandbox, "export async function run(): Promise<number> { return 7 }") == "7");
}

TEST_CASE("source_prep: `export default async function` is called and awaited") {
  Sandbox sandbox;
  CHECK(value_of(sandbox, "export default async function () {\n  return [1, 2];\n}") == "[1,2]");
  CHECK(value_of(sandbox,
                 "const base = 10;\n"
                 "export default async function main() { return base + 1; }") == "11");
  CHECK(value_of(sandbox,
                 "async function main() { return 'by name'; }\n"
                 "export default main;") == "\"by name\"");
}

TEST_CASE("source_prep: `export default <expression>` is the result") {
  Sandbox sandbox;
  CHECK(value_of(sandbox, "export default {a: 1, b: [true]};") == "{\"a\":1,\"b\":[true]}");
  CHECK(value_of(sandbox, "const n = 2;\nexport default n * 21\n") == "42");
}

TEST_CASE("source_prep: a syntax error in plain JavaScript has its line and column") {
  Sandbox sandbox;
  SourceError error = error_of(sandbox,
                               "const a = 1;\n"
                               "const b = a +* 2;\n"
                               "return b;");
  CHECK(error.message == "Unexpected token");
  CHECK(error.line == 2);
  CHECK(error.column == 14);  // the '*'

  SourceError early = error_of(sandbox, "let x = 1;\n  let x = 2;");
  CHECK(early.message == "Identifier 'x' has already been declared");
  CHECK(early.line == 2);
  CHECK(early.column == 7);

  SourceError unterminated = error_of(sandbox, "return 'abc");
  CHECK(unterminated.message == "Unterminated string constant");
  CHECK(unterminated.line == 1);
  CHECK(unterminated.column == 8);

  // TypeScript whose real mistake is further on than its first annotation.
  SourceError typed = error_of(sandbox, "const n: number = 1;\nreturn n +;");
  CHECK(typed.line == 2);
  CHECK(typed.column == 11);
}

TEST_CASE("source_prep: TypeScript generics are stripped") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "function first<T>(xs: T[]): T | undefined { return xs[0]; }\n"
                 "class Box<T> { constructor(private readonly value: T) {}\n"
                 "  get(): T { return this.value; } }\n"
                 "const m = new Map<string, number>();\n"
                 "m.set('k', 5);\n"
                 "const b = new Box<number>(first<number>([m.get('k')!, 2])!);\n"
                 "return b.get();") == "5");
  CHECK(value_of(sandbox,
                 "import type { Thing } from './types';\n"
                 "enum Color { Red, Green }\n"
                 "const c = <Color>Color.Green;\n"
                 "return c satisfies Color;") == "1");
}

TEST_CASE("source_prep: code that mentions ``` in strings and comments is code") {
  Sandbox sandbox;
  CHECK(value_of(sandbox,
                 "const tick = '```';\n"
                 "return [tick + 'js', 'x', tick].join('|');") == "\"```js|x|```\"");
  CHECK(value_of(sandbox,
                 "/* an example:\n"
                 "```js\n"
                 "return 'from the comment';\n"
                 "```\n"
                 "*/\n"
                 "return 'from the code';") == "\"from the code\"");
  // Inside a real fence, a string holding a fence does not end the block.
  CHECK(value_of(sandbox, "```js\nconst s = \"```\";\nreturn s.length;\n```") == "3");
}

TEST_CASE("source_prep: module syntax that cannot run as a body is a SourceError") {
  Sandbox sandbox;
  SourceError error = error_of(sandbox, "const x = 1;\nimport {y} from 'z';\nreturn y;");
  CHECK(error.line == 2);
  CHECK(error.column == 1);
  CHECK(error.message.find("import") != std::string::npos);
}

TEST_CASE("source_prep: odd inputs give a body or a SourceError, never a crash") {
  Sandbox sandbox;
  const std::string inputs[] = {
      std::string("\0\0", 2),
      "\xff\xfe invalid utf-8",
      std::string(20000, '('),
      std::string(20000, '['),
      "```",
      "```ts",
      "~~~\nreturn 1\n~~~",
      "#!/usr/bin/env node\nreturn 2",
      "return 1 // a final comment without newline",
      "}); globalThis.escaped = true; (() => {",
  };
  for (const std::string& input : inputs) {
    auto prepared = sandbox.prepare(input);
    if (auto* body = std::get_if<PreparedSource>(&prepared)) {
      RunOutcome out = sandbox.run(body->body);
      INFO("input: " << input.substr(0, 40) << " body: " << body->body.substr(0, 80));
      CHECK(out.message.find("did not compile") == std::string::npos);
    }
  }
  CHECK(std::holds_alternative<SourceError>(
      sandbox.prepare("}); globalThis.escaped = true; (() => {")));
  CHECK(value_of(sandbox, "#!/usr/bin/env node\nreturn 2") == "2");
  CHECK(value_of(sandbox, "return 1 // a final comment without newline") == "1");
}

TEST_CASE("source_prep: cost of construction and of preparing a tiny body") {
  Sandbox sandbox;
  MESSAGE("SourcePreparer construction (compile + run bundle + warm-up prepare): "
          << sandbox.construction_ms() << " ms");
  // The median microseconds of `runs` preparations of `source`.
  auto median_us = [&](std::string_view source, int runs) {
    std::vector<double> micros;
    micros.reserve(static_cast<std::size_t>(runs));
    for (int i = 0; i < runs; ++i) {
      auto started = std::chrono::steady_clock::now();
      auto prepared = sandbox.prepare(source);
      micros.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
              .count());
      REQUIRE(std::holds_alternative<PreparedSource>(prepared));
    }
    std::sort(micros.begin(), micros.end());
    return micros[micros.size() / 2];
  };
  MESSAGE("median prepare of a tiny body (1,000 runs): " << median_us("return 1 + 1;", 1000)
                                                         << " us");
  MESSAGE("median prepare of a tiny fenced ts body (200 runs): "
          << median_us("```ts\nconst n: number = 1;\nreturn n;\n```", 200) << " us");
}

// Sources of every shape the preparer distinguishes, and a few it refuses.
const std::vector<std::string> kShapes = {
    "return 1",
    "const xs = [1, 2, 3];\nreturn xs.map((x) => x * 2);",
    "```ts\nconst n: number = 1;\nreturn n as number;\n```",
    "Here is the code:\n\n```js\nreturn 42;\n```\nThat is all.",
    "async () => { return 7; }",
    "function main() { return 8; }",
    "export default async function () { return 9; }",
    "export default 10;",
    "interface A { x: number }\nconst a: A = { x: 1 };\nreturn a.x;",
    "return (1 +",
    "let a = 1;\nlet a = 2;",
    "import x from 'y';\nreturn x;",
    "",
};

void check_same_preparation(const std::variant<PreparedSource, SourceError>& a,
                            const std::variant<PreparedSource, SourceError>& b) {
  REQUIRE(a.index() == b.index());
  if (auto* body = std::get_if<PreparedSource>(&a)) {
    CHECK(body->body == std::get<PreparedSource>(b).body);
  } else {
    const auto& x = std::get<SourceError>(a);
    const auto& y = std::get<SourceError>(b);
    CHECK(x.message == y.message);
    CHECK(x.line == y.line);
    CHECK(x.column == y.column);
  }
}

TEST_CASE("source_prep: a preparer taken from the startup snapshot prepares exactly as one built in place") {
  auto* snapshot = dorm::engine::sandbox::startup_snapshot();
  REQUIRE(snapshot != nullptr);
  Sandbox built;
  Sandbox from_snapshot(snapshot);
  Sandbox another_from_snapshot(snapshot);  // the snapshot is read, never used up
  for (const std::string& source : kShapes) {
    INFO("source: " << source);
    auto expected = built.prepare(source);
    check_same_preparation(expected, from_snapshot.prepare(source));
    check_same_preparation(expected, another_from_snapshot.prepare(source));
  }
  CHECK(value_of(from_snapshot, "```ts\nconst n: number = 41;\nreturn n + 1;\n```") == "42");
  // The preparer's context never leaks into a context user code gets from the same isolate.
  CHECK(value_of(from_snapshot, "return typeof globalThis.__dormPrepare") == "\"undefined\"");
}

TEST_CASE("source_prep: the prepared cache answers exactly the body stored for exactly that source") {
  PreparedCache cache;
  CHECK_FALSE(cache.find("return 1").has_value());
  cache.insert("return 1", "return 1\n");
  REQUIRE(cache.find("return 1").has_value());
  CHECK(*cache.find("return 1") == "return 1\n");
  CHECK_FALSE(cache.find("return 1 ").has_value());  // whole text, byte for byte
  CHECK_FALSE(cache.find("return").has_value());
  cache.insert("return 1", "something else\n");  // a second preparation of the same text
  CHECK(*cache.find("return 1") == "return 1\n");
  CHECK(cache.size() == 1);
}

TEST_CASE("source_prep: the prepared cache drops the least recently used entries past its bounds") {
  PreparedCache cache;
  for (std::size_t i = 0; i < PreparedCache::kMaxEntries; ++i) {
    cache.insert("return " + std::to_string(i), "body " + std::to_string(i));
  }
  CHECK(cache.size() == PreparedCache::kMaxEntries);
  CHECK(cache.find("return 0").has_value());  // now the most recently used
  cache.insert("return new", "body new");
  CHECK(cache.size() == PreparedCache::kMaxEntries);
  CHECK(cache.find("return 0").has_value());
  CHECK_FALSE(cache.find("return 1").has_value());  // the least recently used went
  CHECK(cache.find("return new").has_value());

  // By bytes: a few large sources push out the rest; one larger than the bound is not kept.
  std::string big(PreparedCache::kMaxBytes / 3, 'x');
  for (char c : {'a', 'b', 'c'}) cache.insert(std::string(1, c) + big, "b");
  CHECK(cache.bytes() <= PreparedCache::kMaxBytes);
  CHECK_FALSE(cache.find("a" + big).has_value());
  CHECK(cache.find("c" + big).has_value());
  cache.insert(std::string(PreparedCache::kMaxBytes + 1, 'y'), "b");
  CHECK_FALSE(cache.find(std::string(PreparedCache::kMaxBytes + 1, 'y')).has_value());
  CHECK(cache.find("c" + big).has_value());
}
