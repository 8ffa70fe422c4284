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
// The snapshot also holds a third context: a fresh one with the prelude already applied
// (prelude.hpp). Each execution's context is a copy of it, deserialised, so no execution
// pays for running the prelude (about a fifth of a context's cost when it ran per context).
//
// Built before the seccomp filter, by the worker itself or — the usual case — by the pool's
// first worker and handed to the others (wire::Snapshot; docs/engine.md, "One startup
// snapshot per pool"). A snapshot cannot be carried between V8 builds or flag sets, so it
// is only ever used by workers of the same executable with the same flags and hash seed.
#pragma once

#include <v8.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dorm/engine/wire.hpp"

#include "prelude.hpp"

namespace dorm::engine::sandbox {

struct StartupSnapshot {
  // V8's view of `bytes` (set_bytes keeps the two in step): V8 takes it through a non-const
  // pointer but only reads it, for as long as any isolate made from it exists.
  v8::StartupData blob{nullptr, 0};
  std::size_t preparer_context = 0;  // for SourcePreparer(isolate, index)
  // An execution context with the prelude applied; nullopt if the snapshot was made
  // without a bridge or the prelude failed, and slots then apply the prelude to each
  // fresh context themselves.
  std::optional<PreludeContextIndex> prelude;
  // The bridge's callbacks as V8's null-terminated table of external references: an
  // isolate made from this blob must be given it (CreateParams::external_references).
  std::vector<std::intptr_t> external_references;

  StartupSnapshot() = default;
  StartupSnapshot(const StartupSnapshot&) = delete;
  StartupSnapshot& operator=(const StartupSnapshot&) = delete;

  void set_bytes(std::string made) {
    bytes = std::move(made);
    blob = v8::StartupData{bytes.data(), static_cast<int>(bytes.size())};
  }

 private:
  std::string bytes;
};

// Builds a snapshot with the preparer's context and, if `bridge` is not empty, the prelude
// context over that bridge. nullptr when it cannot be built (the bundle did not load).
std::unique_ptr<StartupSnapshot> build_startup_snapshot(std::span<const BridgeFunction> bridge);

// The snapshot as the pool passes it on, and back. from_wire() takes the indexes as sent: the
// message comes from the pool's first worker, which made it before it ran any execution.
// nullptr when the message cannot describe a snapshot (no blob, or an index V8 cannot
// take).
wire::Snapshot to_wire(const StartupSnapshot& snapshot, std::uint64_t hash_seed);
std::unique_ptr<StartupSnapshot> from_wire(wire::Snapshot message,
                                           std::span<const BridgeFunction> bridge);

// The process's snapshot, built by the first call (with that call's bridge; V8 takes the
// blob through a non-const pointer but only reads it, and it lives as long as the process,
// since isolates read it while they exist). nullptr when it cannot be built: slots then
// build their isolates and preparers without it.
StartupSnapshot* startup_snapshot(std::span<const BridgeFunction> bridge = {});

}  // namespace dorm::engine::sandbox
