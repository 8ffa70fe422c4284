// The worker's V8 platform: the default platform, except that the wall clock V8 reads for
// `Date.now()`, `new Date()` and Intl is the execution's journaled host time.
//
// Replacing `Date` in the prelude is not enough (Intl reads the platform clock directly), so
// the clock is overridden where V8 reads it. The time is per thread: each slot thread runs one
// execution at a time and sets its time as inputs arrive; other threads (V8's own workers,
// GC tracing) see the real clock.
#pragma once

#include <memory>

namespace v8 {
class Platform;
}

namespace dorm::engine::sandbox {

// Initialises ICU, this platform and V8, once per process. `flags` go to
// V8::SetFlagsFromString first. Returns the default platform inside, for PumpMessageLoop.
v8::Platform& init_v8_with_host_time(const char* flags);

// The time Date.now() returns on the calling thread from now on; NaN restores the real clock.
void set_thread_host_time(double ms_since_epoch);

}  // namespace dorm::engine::sandbox
