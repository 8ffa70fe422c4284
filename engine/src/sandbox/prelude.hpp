// The JavaScript that sets up an execution's globals (docs/engine.md, "Globals"), and the
// two ways a slot gets a context with it applied: run in a fresh context, or made once into
// the worker's startup snapshot and deserialised with each context.
#pragma once

#include <v8.h>

#include <cstddef>
#include <optional>
#include <span>

namespace dorm::engine::sandbox {

// A script whose completion value is a function `(bridge) => ({init, fire})`. It runs once
// per context, before user code, with the native bridge as its argument: the bridge is only
// ever held in the prelude's closure, never on the global object, so user code cannot
// reach it.
extern const char kPrelude[];

// One native function of the bridge, by the name the prelude reads it under. The callbacks
// find their slot through the isolate (Isolate::GetData(0)), not through data bound to the
// function, so the functions can live in a snapshot.
struct BridgeFunction {
  const char* name;
  v8::FunctionCallback callback;
};

// Runs the prelude in `context` with a bridge of `functions`, and removes the globals no
// execution may have (WebAssembly, shared memory). Returns the prelude's hooks object
// ({init, fire}); empty with the exception pending if the prelude threw.
v8::MaybeLocal<v8::Object> install_prelude(v8::Local<v8::Context> context,
                                           std::span<const BridgeFunction> functions);

// Where an execution context with the prelude applied sits in a startup snapshot.
struct PreludeContextIndex {
  std::size_t context = 0;  // for Context::FromSnapshot
  std::size_t hooks = 0;    // for the context's GetDataFromSnapshotOnce<v8::Object>
};

// Adds to `creator` a fresh context with the prelude applied, its hooks attached as the
// context's snapshot data. The snapshot then needs every bridge callback among its external
// references, when made and when used. nullopt if the prelude failed.
std::optional<PreludeContextIndex> add_prelude_context(v8::SnapshotCreator& creator,
                                                      std::span<const BridgeFunction> functions);

// A fresh copy of the snapshot's prelude context (in an isolate made from that snapshot),
// with its own hooks object in `*hooks`. The globals install_prelude removes are removed
// again: V8 adds them back to a context it deserialises when its flags enable them.
v8::MaybeLocal<v8::Context> prelude_context_from_snapshot(v8::Isolate* isolate, PreludeContextIndex index,
                                                          v8::Local<v8::Object>* hooks);

}  // namespace dorm::engine::sandbox
