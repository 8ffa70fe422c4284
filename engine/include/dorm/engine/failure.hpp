// Why an execution failed. Every kind is final: an execution reports exactly one
// `completed` or one `failed`, never both, never twice.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dorm::engine {

enum class FailureKind : std::uint8_t {
  syntax_error = 1,             // the source does not parse (message has line and column)
  runtime_error = 2,            // an uncaught exception or a rejected result promise
  memory_limit = 3,             // Limits::heap_bytes (V8 heap or ArrayBuffers)
  cpu_limit = 4,                // Limits::cpu_ms
  wall_limit = 5,               // Limits::wall_ms (time waiting on tools excluded)
  stack_limit = 6,              // Limits::stack_bytes (uncaught stack overflow)
  log_limit = 7,                // Limits::log_bytes
  output_limit = 8,             // Limits::output_bytes (emits plus result)
  tool_call_limit = 9,          // Limits::tool_calls
  tool_concurrency_limit = 10,  // Limits::concurrent_tool_calls
  cancelled = 11,               // Execution::cancel()
  engine_crashed = 12,          // the worker process died or broke the protocol
  nondeterministic_replay = 13, // replaying the journal took a different path
  engine_overloaded = 14,       // the pool's queue of waiting executions is full
};

// The largest wire value: kinds run from 1 to this, with no gaps (a table indexed by the
// wire value has kLastFailureKind + 1 entries, the first unused).
inline constexpr std::uint8_t kLastFailureKind =
    static_cast<std::uint8_t>(FailureKind::engine_overloaded);

// A stable snake_case name ("memory_limit"), used in results, logs and docs.
std::string_view to_string(FailureKind kind) noexcept;
// The kind with that wire value, if there is one.
std::optional<FailureKind> failure_kind_from_wire(std::uint8_t value) noexcept;

}  // namespace dorm::engine
