// Structured logs: every line is an event name plus typed fields.
//
//   log::warn("slow_turn", {{"ns", ns}, {"id", id}, {"ms", took}});
//
// goes through spdlog's default logger. In text mode the message reads
// `slow_turn ns=echo id=… ms=12` (strings quoted when they hold spaces, quotes or '=');
// in JSON mode (`configure_logging(LogFormat::json, …)`) the line is one JSON object
// written with RapidJSON: {"time": ISO-8601 UTC, "level", "event", then the fields in
// order}. A message logged straight through spdlog (a library's, say) becomes
// {"event": "log", "message": …}. The JSON formatter finds the event's fields through a
// thread-local set for the duration of the logger call, so loggers that format on the
// calling thread (every synchronous spdlog logger; not the async one) are required.
#pragma once

#include <spdlog/common.h>
#include <spdlog/formatter.h>

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "dorm/result.hpp"

namespace dorm::log {

// One field of an event. Holds views: build it inside the log call's argument list.
class Field {
 public:
  using Value = std::variant<std::string_view, std::int64_t, std::uint64_t, double, bool>;
  Field(std::string_view key, std::string_view v) : key_(key), value_(v) {}
  Field(std::string_view key, const char* v) : key_(key), value_(std::string_view(v)) {}
  Field(std::string_view key, const std::string& v) : key_(key), value_(std::string_view(v)) {}
  Field(std::string_view key, bool v) : key_(key), value_(v) {}
  Field(std::string_view key, double v) : key_(key), value_(v) {}
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Field(std::string_view key, T v) : key_(key) {
    if constexpr (std::is_signed_v<T>) {
      value_ = static_cast<std::int64_t>(v);
    } else {
      value_ = static_cast<std::uint64_t>(v);
    }
  }
  std::string_view key() const { return key_; }
  const Value& value() const { return value_; }

 private:
  std::string_view key_;
  Value value_;
};

using Fields = std::initializer_list<Field>;

// Logs `event` with `fields` at `level` on spdlog's default logger.
void emit(spdlog::level::level_enum level, std::string_view event, Fields fields = {});
inline void debug(std::string_view event, Fields fields = {}) {
  emit(spdlog::level::debug, event, fields);
}
inline void info(std::string_view event, Fields fields = {}) {
  emit(spdlog::level::info, event, fields);
}
inline void warn(std::string_view event, Fields fields = {}) {
  emit(spdlog::level::warn, event, fields);
}
inline void error(std::string_view event, Fields fields = {}) {
  emit(spdlog::level::err, event, fields);
}

// The text form of an event: `event k=v k2="v 2"`.
std::string render_text(std::string_view event, Fields fields = {});

enum class LogFormat { text, json };

// spdlog formatter writing one JSON object per line (see the top of this file).
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// Parses "json" / "text". Errors: invalid_argument naming the accepted values.
Result<LogFormat> parse_format(std::string_view text);
// Parses "trace", "debug", "info", "warn", "error", "critical", "off".
Result<spdlog::level::level_enum> parse_level(std::string_view text);

// Makes spdlog's default logger write to stderr in `format`, from `level` up.
void configure(LogFormat format, spdlog::level::level_enum level);

}  // namespace dorm::log
