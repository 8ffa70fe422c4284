#include "dorm/runtime/log.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "dorm/storage/engine_log.hpp"

#include <array>
#include <ctime>
#include <span>

namespace dorm::log {
namespace {

struct CurrentEvent {
  std::string_view event;
  std::span<const Field> fields;
  const char* payload;  // identifies the message this event belongs to
};

// Set by emit() only while spdlog formats and writes its message on this thread.
thread_local const CurrentEvent* current_event = nullptr;

bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

void append_quoted(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out.push_back(c);
    }
  }
  out.push_back('"');
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                     rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>;

void write_string(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void write_time(JsonWriter& w, spdlog::log_clock::time_point time) {
  auto since = time.time_since_epoch();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - secs).count();
  std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 40> buf{};
  std::size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%S", &tm);
  n += static_cast<std::size_t>(
      std::snprintf(buf.data() + n, buf.size() - n, ".%03dZ", static_cast<int>(millis)));
  w.String(buf.data(), static_cast<rapidjson::SizeType>(n));
}

}  // namespace

std::string render_text(std::string_view event, Fields fields) {
  std::string out(event);
  for (const auto& f : fields) {
    out.push_back(' ');
    out += f.key();
    out.push_back('=');
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string_view>) {
            if (needs_quotes(v)) {
              append_quoted(out, v);
            } else {
              out += v;
            }
          } else if constexpr (std::is_same_v<T, bool>) {
            out += v ? "true" : "false";
          } else {
            out += fmt::to_string(v);
          }
        },
        f.value());
  }
  return out;
}

void emit(spdlog::level::level_enum level, std::string_view event, Fields fields) {
  auto logger = spdlog::default_logger_raw();
  if (!logger || !logger->should_log(level)) return;
  std::string text = render_text(event, fields);
  CurrentEvent current{event, std::span<const Field>(fields.begin(), fields.size()), text.data()};
  current_event = &current;
  // The string_view overload hands `text` to the sinks as the payload itself, which is
  // how the JSON formatter recognises this message as the current event.
  logger->log(level, spdlog::string_view_t(text.data(), text.size()));
  current_event = nullptr;
}

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("time");
  write_time(w, msg.time);
  w.Key("level");
  auto level = spdlog::level::to_string_view(msg.level);
  w.String(level.data(), static_cast<rapidjson::SizeType>(level.size()));
  const CurrentEvent* ev = current_event;
  if (ev && ev->payload == msg.payload.data()) {
    w.Key("event");
    write_string(w, ev->event);
    for (const auto& f : ev->fields) {
      write_string(w, f.key());
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string_view>) {
              write_string(w, v);
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
              w.Int64(v);
            } else if constexpr (std::is_same_v<T, std::uint64_t>) {
              w.Uint64(v);
            } else if constexpr (std::is_same_v<T, double>) {
              w.Double(v);
            } else {
              w.Bool(v);
            }
          },
          f.value());
    }
  } else {
    w.Key("event");
    w.String("log");
    w.Key("message");
    w.String(msg.payload.data(), static_cast<rapidjson::SizeType>(msg.payload.size()));
  }
  w.EndObject();
  dest.append(buffer.GetString(), buffer.GetString() + buffer.GetSize());
  dest.push_back('\n');
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

Result<LogFormat> parse_format(std::string_view text) {
  if (text == "json") return LogFormat::json;
  if (text == "text") return LogFormat::text;
  return Error{ErrorCode::invalid_argument,
               "unknown log format '" + std::string(text) + "': use json or text"};
}

Result<spdlog::level::level_enum> parse_level(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 7> kLevels{{
      {"trace", spdlog::level::trace},
      {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},
      {"critical", spdlog::level::critical},
      {"off", spdlog::level::off},
  }};
  for (const auto& [name, level] : kLevels) {
    if (name == text) return level;
  }
  return Error{ErrorCode::invalid_argument,
               "unknown log level '" + std::string(text) +
                   "': use trace, debug, info, warn, error, critical or off"};
}

void configure(LogFormat format, spdlog::level::level_enum level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (format == LogFormat::json) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc));
  }
  auto logger = std::make_shared<spdlog::logger>("dorm", std::move(sink));
  logger->set_level(level);
  // Errors are rare and matter most right before a crash: write them through at once.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
  // The storage engines' own diagnostics (RocksDB's info log, which no longer goes to a
  // LOG file: see engine_log.hpp) become `rocksdb` events. Its info lines (options,
  // flushes, compactions) are detail for whoever debugs the store: debug. Its warnings and
  // errors: info, not warn or error, because RocksDB says ERROR for things that are
  // normal here (creating a store logs "Error when reading ... dir NotFound"); what
  // matters to an operator dorm reports itself (failed commits, storage_no_space).
  storage::set_engine_log_sink([](storage::EngineLogLevel engine_level, std::string_view engine,
                                  std::string_view message) {
    auto at = spdlog::level::debug;
    if (engine_level == storage::EngineLogLevel::warn || engine_level == storage::EngineLogLevel::error) {
      at = spdlog::level::info;
    }
    emit(at, engine, {{"message", message}});
  });
}

}  // namespace dorm::log
