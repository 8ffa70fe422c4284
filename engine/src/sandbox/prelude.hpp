// The JavaScript that sets up an execution's globals (docs/engine.md, "Globals").
#pragma once

namespace dorm::engine::sandbox {

// A script whose completion value is a function `(bridge) => ({init, fire, settle})`. It
// runs once per context, before user code, with the native bridge as its argument: the
// bridge is only ever held in the prelude's closure, never on the global object, so user
// code cannot reach it.
extern const char kPrelude[];

}  // namespace dorm::engine::sandbox
