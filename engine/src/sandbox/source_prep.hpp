// Source preparation: the code a model passes to `execute` becomes the body of an async
// function, inside the worker, before anything runs.
//
// Models write code in many shapes: a fenced Markdown block amid prose, TypeScript, a lone
// arrow function, a named `main`, `export default`. engine/js/prepare.js (acorn to decide
// the shape and report syntax errors, sucrase to strip types) turns each into a plain body;
// its header comment lists the rules. It is bundled at build time into kPrepareBundle,
// which a SourcePreparer compiles into a context of its own. That context only ever sees the
// code as a string to parse: nothing the model wrote runs there, and user code never
// reaches it.
//
// The body's contract: `async function () { "use strict"; <body> }` is valid, and its
// resolved value is the execution's result. Line k of the body is line k of the source the
// model wrote (a fenced block keeps the lines of the prose above it), so a runtime error's
// line needs no mapping once the wrapper's own first line is accounted for.
#pragma once

#include <v8.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace dorm::engine::sandbox {

struct PreparedSource {
  std::string body;  // statements for an async function body; ends with a newline
};

// The code cannot run as written. `line` and `column` are 1-based and relative to the source
// as the model wrote it, prose around a fenced block included. They are 0 when the problem
// has no position (the preparer itself failed, or was terminated). The column is exact
// except on a line whose TypeScript types were stripped before an error that only the
// JavaScript parser detects (such as a duplicate `let`); the line is always exact.
struct SourceError {
  std::string message;  // without position, e.g. "Unexpected token"
  int line = 0;
  int column = 0;
};

// Compiles the bundle into a context of its own in `isolate` (once, at construction: this
// happens when a worker warms up, off the request path). Call only on the isolate's thread
// with the isolate entered. The preparer's context is never given to user code.
//
// The preparer's heap (a few MiB: two parsers' code and data) lives in `isolate` and counts
// against its heap limit. Destroy the preparer before disposing of the isolate.
class SourcePreparer {
 public:
  explicit SourcePreparer(v8::Isolate* isolate);

  // Takes the preparer's context, already loaded and warmed up, from the isolate's startup
  // snapshot, where add_to_snapshot() put it at `snapshot_index`: a few milliseconds instead
  // of the tens that compiling and warming the bundle costs. Same thread rule as above.
  SourcePreparer(v8::Isolate* isolate, std::size_t snapshot_index);

  // Loads and warms the bundle in a new context of `creator`'s isolate and adds that context
  // to the snapshot. Returns its index, or nothing when the bundle could not be loaded (then
  // the worker builds each preparer the slow way, which reports the failure).
  static std::optional<std::size_t> add_to_snapshot(v8::SnapshotCreator& creator);
  SourcePreparer(const SourcePreparer&) = delete;
  SourcePreparer& operator=(const SourcePreparer&) = delete;

  // Whether the bundle loaded; prepare() fails otherwise.
  bool loaded() const { return init_error_.empty(); }

  // Prepares `source` (UTF-8; invalid sequences become U+FFFD). Never throws into the
  // caller's JavaScript: a failure of the preparer itself, including termination of the
  // isolate while it runs, is a SourceError without position. Same thread rule as above;
  // no context needs to be entered.
  std::variant<PreparedSource, SourceError> prepare(std::string_view source);

 private:
  v8::Isolate* isolate_;
  v8::Global<v8::Context> context_;
  v8::Global<v8::Function> prepare_;  // the bundle's __dormPrepare
  // Set when the bundle could not be loaded (a broken build, or the isolate out of heap or
  // terminated during warm-up); every prepare() then returns it rather than crash the worker.
  std::string init_error_;

  void load(v8::Local<v8::Context> context);  // compiles the bundle and warms it up
  void adopt(v8::Local<v8::Context> context);  // finds __dormPrepare in a loaded context
};

}  // namespace dorm::engine::sandbox
