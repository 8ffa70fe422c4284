#include "dorm/result.hpp"

namespace dorm {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::limit_exceeded: return "limit_exceeded";
    case ErrorCode::io_error: return "io_error";
    case ErrorCode::corruption: return "corruption";
    case ErrorCode::busy: return "busy";
    case ErrorCode::fenced: return "fenced";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::read_only: return "read_only";
    case ErrorCode::no_space: return "no_space";
    case ErrorCode::not_supported: return "not_supported";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

std::string Error::describe() const {
  std::string out{to_string(code)};
  out += ": ";
  out += message;
  return out;
}

}  // namespace dorm
