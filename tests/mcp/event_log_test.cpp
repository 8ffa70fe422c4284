// EventLog over an in-memory SessionStore: retention by count and bytes, chunked events,
// replay after a cursor, finished streams and their expiry; and event id parsing.
#include "dorm/mcp/event_log.hpp"

#include <doctest/doctest.h>

#include "dorm/mcp/session_keys.hpp"
#include "map_store.hpp"

using namespace dorm;
using namespace dorm::mcp;
using dorm::testing::MapStore;

namespace {

std::string message(int i) { return R"({"jsonrpc":"2.0","method":"m","params":{"i":)" + std::to_string(i) + "}}"; }

}  // namespace

TEST_CASE("event ids: print and parse one spelling only") {
  EventId id{0x0123456789abcdefULL, 42};
  CHECK(id.to_string() == "0123456789abcdef-42");
  CHECK(parse_event_id("0123456789abcdef-42") == id);
  CHECK(parse_event_id("ffffffffffffffff-18446744073709551615") == EventId{~0ULL, ~0ULL});
  for (const char* bad : {"", "0123456789abcdef", "0123456789abcdef-", "0123456789ABCDEF-1",
                          "0123456789abcdef-01", "0123456789abcdef-+1", "0123456789abcdef--1",
                          "ffffffffffffffff-18446744073709551616", "123456789abcdef-1",
                          "0123456789abcdef_1", "_GET_stream", "0123456789abcdef-1 "}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_event_id(bad));
  }
}

TEST_CASE("event log: a stream of 1,200 events keeps exactly the newest 1,000; ids are dense and decodable") {
  MapStore store;
  EventLog log(store);
  REQUIRE(log.open(7, "i:1", 500).ok());
  std::vector<EventId> ids;
  for (int i = 0; i < 1200; ++i) {
    auto id = log.append(7, message(i));
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  CHECK(ids.front() == EventId{7, 1});  // seq 0 is the priming event
  CHECK(ids.back() == EventId{7, 1200});
  for (const auto& id : ids) CHECK(parse_event_id(id.to_string()) == id);
  auto record = log.stream(7);
  REQUIRE(record.ok());
  CHECK((*record)->events == 1000);
  CHECK((*record)->first == 201);
  CHECK(store.count("e/") == 1000);
  // A cursor older than the oldest kept event replays from the oldest, and says so.
  auto replay = log.replay_after(EventId{7, 0});
  REQUIRE(replay.ok());
  CHECK(replay->truncated);
  REQUIRE(replay->events.size() == 1000);
  CHECK(replay->events.front().id.seq == 201);
  CHECK(replay->events.front().data == message(200));
  CHECK(replay->events.back().data == message(1199));
  auto tail = log.replay_after(EventId{7, 1198});
  REQUIRE(tail.ok());
  CHECK_FALSE(tail->truncated);
  REQUIRE(tail->events.size() == 2);
  CHECK(tail->events[1].id.seq == 1200);
}

TEST_CASE("event log: bytes are bounded too, the newest is never dropped, and a 1 MiB event replays byte-identical") {
  MapStore store;
  EventLog log(store);
  REQUIRE(log.open(1, "i:1", 0).ok());
  std::string big(1024 * 1024, 'x');
  for (std::size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>('a' + i % 26);
  for (int i = 0; i < 5; ++i) REQUIRE(log.append(1, big).ok());  // 5 MiB: the first goes
  auto r = log.stream(1);
  CHECK((*r)->events == 4);
  CHECK((*r)->bytes == 4 * big.size());
  auto replay = log.replay_after(EventId{1, 3});
  REQUIRE(replay.ok());
  REQUIRE(replay->events.size() == 1);
  CHECK(replay->events[0].data == big);
  CHECK(store.count("e/") == 4 * 8);  // 128 KiB chunks
  // One event of the whole stream limit is kept alone; over it is refused and stores nothing.
  REQUIRE(log.append(1, std::string(4 * 1024 * 1024, 'y')).ok());
  CHECK((*log.stream(1))->events == 1);
  auto over = log.append(1, std::string(4 * 1024 * 1024 + 1, 'z'));
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == ErrorCode::limit_exceeded);
  CHECK(over.error().message.find("4194305 bytes") != std::string::npos);
  CHECK((*log.stream(1))->events == 1);
}

TEST_CASE("event log: a finished stream resumes within its retention and is gone after it") {
  MapStore store;
  EventLog log(store);
  REQUIRE(log.open(3, "i:9", 500).ok());
  auto result = log.append(3, message(1));
  REQUIRE(result.ok());
  const std::int64_t t0 = 1'700'000'000'000;
  REQUIRE(log.finish(3, t0).ok());
  CHECK_FALSE(log.append(3, message(2)).ok());
  CHECK(*log.next_expiry() == t0 + 15 * 60 * 1000);

  CHECK(*log.expire(t0 + 14 * 60 * 1000 + 59 * 1000) == 0);
  auto resumed = log.replay_after(EventId{3, 0});
  REQUIRE(resumed.ok());
  CHECK(resumed->finished);
  REQUIRE(resumed->events.size() == 1);
  CHECK(resumed->events[0].id == *result);
  // Nothing after the last event: a finished stream with nothing to send (204).
  auto nothing = log.replay_after(*result);
  REQUIRE(nothing.ok());
  CHECK(nothing->events.empty());
  CHECK(nothing->finished);

  CHECK(*log.expire(t0 + 15 * 60 * 1000 + 1000) == 1);
  CHECK(store.data.empty());
  CHECK(log.replay_after(EventId{3, 0}).error().code == ErrorCode::not_found);
  CHECK_FALSE(*log.next_expiry());
}

TEST_CASE("event log: unknown streams and cursors past the end are refused") {
  MapStore store;
  EventLog log(store);
  REQUIRE(log.open(5, "", 0).ok());
  CHECK(log.append(6, "x").error().code == ErrorCode::not_found);
  CHECK(log.replay_after(EventId{6, 0}).error().code == ErrorCode::not_found);
  CHECK(log.replay_after(EventId{5, 0}).error().code == ErrorCode::not_found);  // no event yet
  REQUIRE(log.append(5, "x").ok());  // seq 0: no priming on this stream
  CHECK(log.replay_after(EventId{5, 0}).ok());
  CHECK(log.replay_after(EventId{5, 1}).error().code == ErrorCode::not_found);
  auto all = log.streams();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK((*all)[0].id == 5);
}

TEST_CASE("event log: events() shows every kept event, the priming event and whole chunked ones included") {
  MapStore store;
  EventLogLimits limits;
  limits.chunk_bytes = 16;
  limits.max_events = 3;
  EventLog log(store, limits);
  REQUIRE(log.open(9, "i:1", 500).ok());
  auto primed = log.events(9);
  REQUIRE(primed.ok());
  REQUIRE(primed->size() == 1);
  CHECK((*primed)[0].id == EventId{9, 0});
  CHECK((*primed)[0].data.empty());

  std::string long_message = message(123456789) + std::string(40, ' ');  // three chunks
  REQUIRE(log.append(9, long_message).ok());
  REQUIRE(log.append(9, message(2)).ok());
  auto three = log.events(9);
  REQUIRE(three.ok());
  REQUIRE(three->size() == 3);
  CHECK((*three)[0].data.empty());
  CHECK((*three)[1].data == long_message);
  CHECK((*three)[2].data == message(2));

  // Over the count limit the oldest go, the priming event first; events() follows.
  REQUIRE(log.append(9, message(3)).ok());
  REQUIRE(log.append(9, message(4)).ok());
  auto kept = log.events(9);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 3);
  CHECK((*kept)[0].id == EventId{9, 2});
  CHECK((*kept)[2].data == message(4));
  CHECK(log.events(10).error().code == ErrorCode::not_found);
}

TEST_CASE("event log: the priming event is counted and shown, but stores no key") {
  MapStore store;
  EventLog log(store);
  REQUIRE(log.open(11, "i:1", 500).ok());
  CHECK(store.count("e/") == 0);
  auto record = log.stream(11);
  REQUIRE(record.ok());
  CHECK((*record)->next == 1);
  CHECK((*record)->events == 1);
  auto shown = log.events(11);
  REQUIRE(shown.ok());
  REQUIRE(shown->size() == 1);
  CHECK((*shown)[0].id == EventId{11, 0});
  REQUIRE(log.append(11, message(1)).ok());
  CHECK(store.count("e/") == 1);
  auto replay = log.replay_after(EventId{11, 0});
  REQUIRE(replay.ok());
  CHECK_FALSE(replay->truncated);
  REQUIRE(replay->events.size() == 1);
  CHECK(replay->events[0].id == EventId{11, 1});

  // A stream stored before the priming event went unstored has its empty chunk: shown once.
  REQUIRE(log.open(12, "i:2", 500).ok());
  REQUIRE(store.put(dorm::mcp::session_keys::event_chunk(12, 0, 0), "").ok());
  auto legacy = log.events(12);
  REQUIRE(legacy.ok());
  REQUIRE(legacy->size() == 1);
  CHECK((*legacy)[0].id == EventId{12, 0});
}
