#include "dorm/engine/failure.hpp"

namespace dorm::engine {

std::string_view to_string(FailureKind kind) noexcept {
  switch (kind) {
    case FailureKind::syntax_error: return "syntax_error";
    case FailureKind::runtime_error: return "runtime_error";
    case FailureKind::memory_limit: return "memory_limit";
    case FailureKind::cpu_limit: return "cpu_limit";
    case FailureKind::wall_limit: return "wall_limit";
    case FailureKind::stack_limit: return "stack_limit";
    case FailureKind::log_limit: return "log_limit";
    case FailureKind::output_limit: return "output_limit";
    case FailureKind::tool_call_limit: return "tool_call_limit";
    case FailureKind::tool_concurrency_limit: return "tool_concurrency_limit";
    case FailureKind::cancelled: return "cancelled";
    case FailureKind::engine_crashed: return "engine_crashed";
    case FailureKind::nondeterministic_replay: return "nondeterministic_replay";
    case FailureKind::engine_overloaded: return "engine_overloaded";
  }
  return "unknown";
}

std::optional<FailureKind> failure_kind_from_wire(std::uint8_t value) noexcept {
  if (value < 1 || value > kLastFailureKind) return std::nullopt;
  return static_cast<FailureKind>(value);
}

}  // namespace dorm::engine
