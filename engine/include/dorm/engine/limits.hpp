// Per-execution limits of the engine.
//
// Every limit is named, has a default taken from the system dorm's engine is modelled on
// (QuickJS with 64 MiB, 1 MiB of stack and a 5-minute timeout), and ends only the execution
// that overran it, with a FailureKind of its own and a message naming the limit and its
// value. docs/engine.md has the table.
#pragma once

#include <cstdint>
#include <string>

#include "dorm/result.hpp"

namespace dorm::engine {

struct Limits {
  // V8 heap of the execution's isolate (old generation); ArrayBuffer backing stores are
  // counted against the same number by the engine's allocator, since V8's own limit does
  // not see them.
  std::uint64_t heap_bytes = 64ull << 20;
  // CPU time of the thread running the execution (CLOCK_THREAD_CPUTIME_ID).
  std::uint64_t cpu_ms = 30'000;
  // Wall time, not counting time spent waiting for tool results: the deadline is
  // max(start, last tool result) + wall_ms, and there is none while a tool call is
  // outstanding (a tool may wait for a person).
  std::uint64_t wall_ms = 300'000;
  // JavaScript stack; deeper recursion throws RangeError, which fails the execution with
  // kind stack_limit unless the code catches it.
  std::uint64_t stack_bytes = 1ull << 20;
  // Bytes of console output ("[level] text" lines) kept per execution.
  std::uint64_t log_bytes = 1ull << 20;
  // Bytes of emitted values plus the result, as JSON.
  std::uint64_t output_bytes = 8ull << 20;
  // Tool calls made over the whole execution, and outstanding at once.
  std::uint32_t tool_calls = 1'000;
  std::uint32_t concurrent_tool_calls = 16;
};

// Bounds a Limits value must respect to be run at all (the worker's threads are sized
// for the stack bound; the heap bound keeps one execution from taking a worker's memory).
inline constexpr std::uint64_t kMaxHeapBytes = 4ull << 30;
inline constexpr std::uint64_t kMinHeapBytes = 8ull << 20;
inline constexpr std::uint64_t kMaxStackBytes = 8ull << 20;
inline constexpr std::uint64_t kMinStackBytes = 64ull << 10;
inline constexpr std::uint64_t kMinWallMs = 10;

// ok, or invalid_argument naming the first field out of bounds and its value.
Result<void> validate(const Limits& limits);

}  // namespace dorm::engine
