// guarded_call — runs a registered handler so that an exception out of it becomes an error
// (private to mcp/src).
//
// Resource and prompt handlers answer within the session's turn, and no exception may
// cross a turn boundary (docs/architecture.md#errors): what one throws is reported as an
// internal error naming the handler and the exception, and the session answers -32603.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::mcp::detail {

template <class T, class F>
Result<T> guarded_call(std::string_view who, F&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    return Error{ErrorCode::internal, std::string(who) + " threw: " + e.what()};
  } catch (...) {
    return Error{ErrorCode::internal, std::string(who) + " threw a non-standard exception"};
  }
}

}  // namespace dorm::mcp::detail
