// dorm::Result<T> — a value or a dorm::Error, used by every layer.
//
// Errors carry a machine-readable code and a message written for a person: it names
// what was wrong and, for limits, both the limit and the actual size. Exceptions never
// cross a layer boundary; functions that can fail return a Result.
//
// value_or_throw() is for code that cannot answer a failure where it happens and must
// give up the whole unit of work: inside a durable object's turn it throws an
// ErrorException, which the runtime turns into a failed turn (nothing kept or released,
// the object reset). Which errors deserve that is written down in docs/architecture.md
// ("Errors"); everything else is handled as a value.
#pragma once

#include <cassert>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dorm {

enum class ErrorCode {
  invalid_argument,  // the caller's input is malformed; nothing was changed
  not_found,         // the named thing does not exist
  limit_exceeded,    // a size or count limit was exceeded; nothing was changed
  io_error,          // the operating system or the storage engine failed
  corruption,        // stored data is not what was written
  busy,              // a lock is held by someone else (e.g. another process)
  fenced,            // this handle was fenced off; a newer owner exists
  unavailable,       // not ready yet or shutting down
  read_only,         // a write to a store opened read-only; nothing was changed
  no_space,          // the store's disk is (nearly) full: the write was refused, nothing changed
  not_supported,     // an optional capability this implementation does not have; nothing changed
  internal,          // a bug in dorm
};

// Whether an error is about the caller's own input (invalid_argument, not_found,
// limit_exceeded): nothing was changed, and the caller can answer it. Every other code is
// a failure of the system, which fails the unit of work it happens in
// (docs/architecture.md, "Errors").
constexpr bool is_input_error(ErrorCode code) noexcept {
  return code == ErrorCode::invalid_argument || code == ErrorCode::not_found ||
         code == ErrorCode::limit_exceeded;
}

// A stable lower-case name for the code, used in logs and error messages.
std::string_view to_string(ErrorCode code) noexcept;

struct Error {
  ErrorCode code;
  std::string message;

  // "invalid_argument: <message>"
  std::string describe() const;
};

// What value_or_throw() throws: the Error, described as "code: message".
class ErrorException : public std::runtime_error {
 public:
  explicit ErrorException(Error error) : std::runtime_error(error.describe()), error_(std::move(error)) {}
  const Error& error() const noexcept { return error_; }

 private:
  Error error_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Precondition: ok().
  T& value() & { assert(ok()); return std::get<0>(state_); }
  const T& value() const& { assert(ok()); return std::get<0>(state_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Precondition: !ok().
  const Error& error() const& { assert(!ok()); return std::get<1>(state_); }
  Error&& error() && { assert(!ok()); return std::get<1>(std::move(state_)); }

  // The value; throws ErrorException when there is none.
  T value_or_throw() && {
    if (!ok()) throw ErrorException(std::get<1>(std::move(state_)));
    return std::get<0>(std::move(state_));
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}

  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }

  const Error& error() const& { assert(failed_); return error_; }
  Error&& error() && { assert(failed_); return std::move(error_); }

  // Throws ErrorException when failed.
  void value_or_throw() const {
    if (failed_) throw ErrorException(error_);
  }

 private:
  Error error_{ErrorCode::internal, {}};
  bool failed_ = false;
};

}  // namespace dorm
