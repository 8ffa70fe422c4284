// Epoch — which activation of which start of the runtime did something.
//
// Each runtime start bumps a durable generation; each activation in a process takes the
// next value of a process-wide counter. Records that must outlive an activation (the MCP
// in-flight journal, paused work) carry the epoch that wrote them, so a later activation
// tells its own records from a dead one's: an older generation died with its process, an
// older activation of the current generation was reset or stopped. Nothing is written at
// activation.
//
// Kept apart from durable_object.hpp (and free of CAF) so protocol code over storage,
// such as the MCP reaper, can compare epochs without the runtime.
#pragma once

#include <compare>
#include <cstdint>

namespace dorm {

struct Epoch {
  std::uint64_t generation = 0;  // durable, bumped at every runtime start
  std::uint64_t activation = 0;  // process-wide, bumped at every activation
  // Generation first: a later start is newer whatever its activation counter says (the
  // counter starts again with each process).
  friend auto operator<=>(const Epoch&, const Epoch&) = default;
};

}  // namespace dorm
