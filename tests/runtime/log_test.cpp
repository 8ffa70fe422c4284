// Structured logs: the text rendering and the JSON formatter (one RapidJSON-parseable
// object per line with time, level, event and typed fields).
#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <vector>

#include "dorm/runtime/log.hpp"

using namespace dorm;

namespace {

// Points spdlog's default logger at a string stream for one test.
struct JsonCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  explicit JsonCapture(spdlog::level::level_enum level = spdlog::level::info) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    sink->set_formatter(std::make_unique<log::JsonFormatter>());
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_level(level);
    spdlog::set_default_logger(logger);
  }
  ~JsonCapture() { spdlog::set_default_logger(previous); }
  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) result.push_back(line);
    return result;
  }
};

}  // namespace

TEST_CASE("log text: event then key=value, strings quoted only when they must be") {
  CHECK(log::render_text("slow_turn", {{"ns", "echo"}, {"ms", 12}}) == "slow_turn ns=echo ms=12");
  CHECK(log::render_text("e", {{"s", "two words"}, {"q", "a\"b"}, {"empty", ""}, {"eq", "k=v"}}) ==
        R"(e s="two words" q="a\"b" empty="" eq="k=v")");
  CHECK(log::render_text("e", {{"b", true}, {"u", std::uint64_t{18446744073709551615ull}}, {"d", 1.5}}) ==
        "e b=true u=18446744073709551615 d=1.5");
  CHECK(log::render_text("e", {{"nl", "a\nb"}}) == R"(e nl="a\nb")");
  CHECK(log::render_text("bare") == "bare");
}

TEST_CASE("log json: one object per line with time, level, event and typed fields") {
  JsonCapture capture;
  std::string id = "abc";
  log::warn("object_reset", {{"ns", "echo"}, {"id", id}, {"count", -3}, {"ok", false}, {"ratio", 0.25},
                             {"text", "line\nbreak \"quoted\""}});
  log::info("started");
  spdlog::info("plain {} message", "spdlog");  // not a structured event
  log::debug("hidden");                          // below the level
  auto lines = capture.lines();
  REQUIRE(lines.size() == 3);

  rapidjson::Document first;
  first.Parse(lines[0].c_str());
  REQUIRE_FALSE(first.HasParseError());
  std::string time = first["time"].GetString();
  CHECK(time.size() == 24);  // 2026-11-29T12:00:00.123Z
  CHECK(time[10] == 'T');
  CHECK(time.back() == 'Z');
  CHECK(std::string(first["level"].GetString()) == "warning");
  CHECK(std::string(first["event"].GetString()) == "object_reset");
  CHECK(std::string(first["ns"].GetString()) == "echo");
  CHECK(std::string(first["id"].GetString()) == "abc");
  CHECK(first["count"].GetInt64() == -3);
  CHECK(first["ok"].IsFalse());
  CHECK(first["ratio"].GetDouble() == 0.25);
  CHECK(std::string(first["text"].GetString()) == "line\nbreak \"quoted\"");
  // Fields keep their order, after time, level and event.
  std::vector<std::string> keys;
  for (rapidjson::SizeType i = 0; i < first.MemberCount(); ++i) {
    keys.push_back((first.MemberBegin() + i)->name.GetString());
  }
  CHECK(keys == std::vector<std::string>{"time", "level", "event", "ns", "id", "count", "ok",
                                         "ratio", "text"});

  rapidjson::Document second;
  second.Parse(lines[1].c_str());
  REQUIRE_FALSE(second.HasParseError());
  CHECK(std::string(second["event"].GetString()) == "started");
  CHECK(second.MemberCount() == 3);

  rapidjson::Document third;
  third.Parse(lines[2].c_str());
  REQUIRE_FALSE(third.HasParseError());
  CHECK(std::string(third["event"].GetString()) == "log");
  CHECK(std::string(third["message"].GetString()) == "plain spdlog message");
}

TEST_CASE("log options: formats and levels parse; anything else is a clear error") {
  CHECK(*log::parse_format("json") == log::LogFormat::json);
  CHECK(*log::parse_format("text") == log::LogFormat::text);
  auto bad = log::parse_format("xml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "unknown log format 'xml': use json or text");
  CHECK(*log::parse_level("warn") == spdlog::level::warn);
  CHECK(*log::parse_level("error") == spdlog::level::err);
  CHECK(*log::parse_level("off") == spdlog::level::off);
  auto level = log::parse_level("loud");
  REQUIRE_FALSE(level.ok());
  CHECK(level.error().message.find("'loud'") != std::string::npos);
}
