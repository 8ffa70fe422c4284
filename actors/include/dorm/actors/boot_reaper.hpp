// Eager reaping at boot (docs/architecture.md#start-up-order): before `dorm serve` is ready, it
// activates exactly the sessions that the runtime index `mcp.inflight` names — the ones
// holding journal records, some of them left by the dead process — so each runs its
// reaper now and a client resuming right after the restart finds its error waiting. The
// cost is proportional to the in-flight records, not to the sessions stored.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct BootReapReport {
  std::size_t records = 0;   // index entries read
  std::size_t sessions = 0;  // distinct sessions woken
  std::size_t failed = 0;    // sessions whose wake failed (their reaper runs on next use)
  std::vector<std::string> errors;  // up to a few, for the log
};

// Wakes every session named in `mcp.inflight` (at most `parallel` at a time) and calls
// `done` once each has answered or failed, on whichever thread finished last. Errors:
// reading the index (then `done` is not called). The sessions namespace must be
// registered.
Result<void> reap_at_boot(Runtime& runtime, std::function<void(BootReapReport)> done,
                          std::size_t parallel = 64);

// Blocking form for `dorm serve` (real threads; not on virtual time): waits at most
// `bound` for the wakes. Errors: the index read, or unavailable naming how many were left.
Result<BootReapReport> reap_at_boot_blocking(Runtime& runtime, std::chrono::milliseconds bound);

}  // namespace dorm::actors
