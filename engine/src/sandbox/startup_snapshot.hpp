// The worker's V8 startup snapshot: every slot isolate starts from it.
//
// A slot's source preparer (source_prep.hpp) costs ~40 ms to compile and warm up the bundle
// in each new isolate — at every worker start (one per slot) and whenever a slot replaces an
// isolate that hit its heap limit. The worker instead builds the preparer's context once, at
// start-up, into a snapshot (with its functions' bytecode kept), and each isolate created
// from it takes that context ready-made. The snapshot's default context is an ordinary fresh
// context, so `v8::Context::New` in such an isolate gives what it gives anywhere: user code
// never sees the preparer's context, which is a separate context of the snapshot.
//
// Built in this process, with this process's V8 flags, before the seccomp filter; a
// snapshot cannot be carried between V8 builds or flag sets anyway.
#pragma once

#include <v8.h>

#include <cstddef>
#include <optional>

namespace dorm::engine::sandbox {

struct StartupSnapshot {
  v8::StartupData blob{nullptr, 0};
  std::size_t preparer_context = 0;  // for SourcePreparer(isolate, index)
};

// Builds the snapshot once per process (V8 takes the blob through a non-const pointer but
// only reads it). Returns nullptr when it cannot be built (the bundle
// did not load): slots then build their isolates and preparers without it.
StartupSnapshot* startup_snapshot();

}  // namespace dorm::engine::sandbox
