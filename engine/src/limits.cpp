#include <string>

#include "dorm/engine/limits.hpp"

namespace dorm::engine {
namespace {

Error out_of_bounds(std::string_view field, std::uint64_t value, std::uint64_t lo, std::uint64_t hi) {
  return Error{ErrorCode::invalid_argument,
               "engine limit " + std::string(field) + " is " + std::to_string(value) +
                   "; it must be between " + std::to_string(lo) + " and " + std::to_string(hi)};
}

}  // namespace

Result<void> validate(const Limits& l) {
  constexpr std::uint64_t kMax = 1ull << 40;
  if (l.heap_bytes < kMinHeapBytes || l.heap_bytes > kMaxHeapBytes) {
    return out_of_bounds("heap_bytes", l.heap_bytes, kMinHeapBytes, kMaxHeapBytes);
  }
  if (l.stack_bytes < kMinStackBytes || l.stack_bytes > kMaxStackBytes) {
    return out_of_bounds("stack_bytes", l.stack_bytes, kMinStackBytes, kMaxStackBytes);
  }
  if (l.cpu_ms < 1 || l.cpu_ms > kMax) return out_of_bounds("cpu_ms", l.cpu_ms, 1, kMax);
  if (l.wall_ms < kMinWallMs || l.wall_ms > kMax) {
    return out_of_bounds("wall_ms", l.wall_ms, kMinWallMs, kMax);
  }
  if (l.log_bytes > kMax) return out_of_bounds("log_bytes", l.log_bytes, 0, kMax);
  if (l.output_bytes < 16 || l.output_bytes > (8ull << 20)) {
    // The result travels in one frame; 8 MiB keeps it well under the 16 MiB frame cap.
    return out_of_bounds("output_bytes", l.output_bytes, 16, 8ull << 20);
  }
  if (l.concurrent_tool_calls < 1 || l.concurrent_tool_calls > 1024) {
    return out_of_bounds("concurrent_tool_calls", l.concurrent_tool_calls, 1, 1024);
  }
  if (l.tool_calls > 1'000'000) return out_of_bounds("tool_calls", l.tool_calls, 0, 1'000'000);
  return Result<void>();
}

}  // namespace dorm::engine
