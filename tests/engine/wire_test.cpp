// The engine's frame protocol and journal encoding: what the host reads from a worker is
// hostile input, so every malformation must be refused with a clear error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dorm/engine/journal.hpp"
#include "dorm/engine/limits.hpp"
#include "dorm/engine/wire.hpp"

using namespace dorm::engine;
using namespace dorm::engine::wire;

namespace {

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Encodes, reads back through a FrameReader fed one byte at a time, and decodes.
Message round_trip(const Message& m) {
  std::string frame;
  encode(m, frame);
  FrameReader reader;
  std::optional<Message> out;
  for (char c : frame) {
    reader.feed(&c, 1);
    auto next = reader.next();
    REQUIRE(next.ok());
    if (next->has_frame) {
      auto decoded = decode(next->body);
      REQUIRE(decoded.ok());
      out = std::move(*decoded);
    }
  }
  REQUIRE(out.has_value());
  CHECK(reader.buffered() == 0);
  return *out;
}

Journal sample_journal() {
  Journal j;
  j.start_ms = 1'700'000'000'123;
  j.seed = 0xfeedfacecafebeefull;
  j.entries = {ToolCallEntry{1, "github.issues.list", R"({"repo":"a"})"},
               TimerSetEntry{1, 250, 1'700'000'000'124},
               ToolResultEntry{1, true, R"([{"n":1}])", 1'700'000'000'200},
               TimerClearEntry{1},
               ToolCallEntry{2, "x", "{}"},
               ToolResultEntry{2, false, R"("denied")", 1'700'000'000'300},
               TimerSetEntry{2, 0, 1'700'000'000'301},
               TimerFiredEntry{2, 1'700'000'000'302}};
  return j;
}

}  // namespace

TEST_CASE("wire: every message survives a byte-at-a-time round trip") {
  Start start{7, "exec_1", "return 1", Limits{}, sample_journal()};
  start.limits.cpu_ms = 1234;
  auto s = std::get<Start>(round_trip(start));
  CHECK(s.exec == 7);
  CHECK(s.id == "exec_1");
  CHECK(s.source == "return 1");
  CHECK(s.limits.cpu_ms == 1234);
  CHECK(s.limits.heap_bytes == Limits{}.heap_bytes);
  CHECK(s.journal == sample_journal());

  auto call = std::get<ToolCall>(round_trip(ToolCall{3, {9, "a.b", R"({"k":[1]})"}}));
  CHECK(call.exec == 3);
  CHECK(call.call == ToolCallEntry{9, "a.b", R"({"k":[1]})"});
  auto result = std::get<ToolResult>(round_trip(ToolResult{3, {9, false, R"("no")", -5}}));
  CHECK(result.result == ToolResultEntry{9, false, R"("no")", -5});
  auto failed = std::get<Failed>(round_trip(Failed{3, FailureKind::memory_limit, "too big"}));
  CHECK(failed.kind == FailureKind::memory_limit);
  CHECK(failed.message == "too big");
  auto log = std::get<Log>(round_trip(Log{3, LogLevel::warn, "careful"}));
  CHECK(log.level == LogLevel::warn);
  CHECK(log.text == "careful");
  CHECK(std::get<TimerSet>(round_trip(TimerSet{3, 2, 100})).delay_ms == 100);
  CHECK(std::get<TimerClear>(round_trip(TimerClear{3, 2})).timer == 2);
  CHECK(std::get<TimerFired>(round_trip(TimerFired{3, {2, 77}})).fired.time_ms == 77);
  CHECK(std::get<Completed>(round_trip(Completed{3, "[1]"})).result_json == "[1]");
  CHECK(std::get<Emit>(round_trip(Emit{3, "{}"})).value_json == "{}");
  CHECK(std::get<Ready>(round_trip(Ready{4})).slots == 4);
  CHECK(std::get<Ping>(round_trip(Ping{11})).nonce == 11);
  CHECK(std::get<Pong>(round_trip(Pong{11})).nonce == 11);
  CHECK(std::get<Cancel>(round_trip(Cancel{5})).exec == 5);
  auto snapshot = std::get<Snapshot>(round_trip(Snapshot{42, 1, true, 2, 3, std::string("blob\0bytes", 10)}));
  CHECK(snapshot.hash_seed == 42);
  CHECK(snapshot.preparer_context == 1);
  CHECK(snapshot.has_prelude);
  CHECK(snapshot.prelude_context == 2);
  CHECK(snapshot.prelude_hooks == 3);
  CHECK(snapshot.blob == std::string("blob\0bytes", 10));
}

TEST_CASE("wire: malformed bodies are refused, naming what is wrong") {
  auto body = [](const Message& m) {
    std::string frame;
    encode(m, frame);
    return frame.substr(4);
  };
  SUBCASE("unknown type") {
    std::string b = "\x63";
    auto r = decode(bytes_of(b));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("unknown frame type 99") != std::string::npos);
  }
  SUBCASE("empty") { CHECK_FALSE(decode({}).ok()); }
  SUBCASE("truncated string") {
    std::string b = body(ToolCall{1, {1, "path", "{}"}});
    b.pop_back();
    auto r = decode(bytes_of(b));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("runs past the end") != std::string::npos);
  }
  SUBCASE("trailing bytes") {
    std::string b = body(Pong{1}) + "x";
    auto r = decode(bytes_of(b));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("1 bytes left after the last field") != std::string::npos);
  }
  SUBCASE("a bool that is neither 0 nor 1") {
    std::string b = body(ToolResult{1, {1, true, "1", 0}});
    b[1 + 8 + 4] = 2;  // type, exec, seq, then the bool
    CHECK_FALSE(decode(bytes_of(b)).ok());
  }
  SUBCASE("unknown failure kind and log level") {
    std::string f = body(Failed{1, FailureKind::cpu_limit, "x"});
    f[1 + 8] = 0;
    CHECK_FALSE(decode(bytes_of(f)).ok());
    std::string l = body(Log{1, LogLevel::info, "x"});
    l[1 + 8] = 9;
    CHECK_FALSE(decode(bytes_of(l)).ok());
  }
  SUBCASE("a startup snapshot without a blob") {
    auto r = decode(bytes_of(body(Snapshot{42, 0, false, 0, 0, ""})));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("an empty startup snapshot") != std::string::npos);
  }
  SUBCASE("a journal count larger than the frame could hold") {
    Start s{1, "e", "", Limits{}, Journal{}};
    std::string b = body(s);
    b[b.size() - 4] = '\xff';
    b[b.size() - 3] = '\xff';
    auto r = decode(bytes_of(b));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("does not fit") != std::string::npos);
  }
}

TEST_CASE("wire: a frame length over the cap breaks the stream for good") {
  FrameReader reader(1024);
  std::string frame;
  encode(Completed{1, std::string(2000, 'x')}, frame);
  reader.feed(frame.data(), frame.size());
  auto r = reader.next();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("outside 1..1024") != std::string::npos);
  std::string ok;
  encode(Pong{1}, ok);
  reader.feed(ok.data(), ok.size());
  CHECK_FALSE(reader.next().ok());  // no resynchronisation
}

TEST_CASE("wire: a zero-length frame is refused") {
  FrameReader reader;
  std::string zero(4, '\0');
  reader.feed(zero.data(), zero.size());
  CHECK_FALSE(reader.next().ok());
}

TEST_CASE("journal: stored form round-trips and refuses garbage") {
  std::string stored;
  encode_journal(sample_journal(), stored);
  auto back = decode_journal(bytes_of(stored));
  REQUIRE(back.ok());
  CHECK(*back == sample_journal());
  auto cut = decode_journal(bytes_of(stored.substr(0, stored.size() - 1)));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().code == dorm::ErrorCode::corruption);
  CHECK_FALSE(decode_journal(bytes_of(stored + "z")).ok());
}

TEST_CASE("journal: open effects are the calls without results and the live timers") {
  Journal j = sample_journal();
  j.entries.push_back(ToolCallEntry{3, "waiting.for.approval", "{}"});
  j.entries.push_back(TimerSetEntry{3, 1000, 5});
  OpenEffects open = open_effects(j);
  REQUIRE(open.calls.size() == 1);
  CHECK(open.calls[0].seq == 3);
  REQUIRE(open.timers.size() == 1);
  CHECK(open.timers[0].timer == 3);
}

TEST_CASE("limits: out-of-bounds values name the field and its value") {
  Limits l;
  CHECK(validate(l).ok());
  l.heap_bytes = 1024;
  auto r = validate(l);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("heap_bytes is 1024") != std::string::npos);
  l = Limits{};
  l.stack_bytes = 64ull << 20;
  CHECK(validate(l).error().message.find("stack_bytes") != std::string::npos);
  l = Limits{};
  l.concurrent_tool_calls = 0;
  CHECK(validate(l).error().message.find("concurrent_tool_calls") != std::string::npos);
  l = Limits{};
  l.wall_ms = 1;
  CHECK_FALSE(validate(l).ok());
}
