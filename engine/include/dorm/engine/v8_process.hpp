// The process-wide V8 platform.
//
// V8 is initialised once per process and never disposed: after V8::Dispose it cannot be
// initialised again, and the engine must outlive every runtime that starts and stops in
// the same process (restart simulation does exactly that).
#pragma once

namespace v8 {
class Platform;
}

namespace dorm::engine {

// Initialises ICU, the default platform and V8 on first call; later calls (from any
// thread) return the same platform without doing anything. Thread-safe.
v8::Platform& v8_platform();

}  // namespace dorm::engine
