#include "dorm/mcp/stream_ids.hpp"

#include <doctest/doctest.h>

#include <set>

#include "dorm/mcp/session_keys.hpp"
#include "map_store.hpp"

using dorm::ErrorCode;
using dorm::mcp::kStreamIdBlock;
using dorm::mcp::StreamIdReservation;
using dorm::mcp::StreamIds;
using dorm::testing::MapStore;
namespace keys = dorm::mcp::session_keys;

namespace {

// Counts the writes of `n`: the reservation is written once per block, never per stream.
struct CountingStore : MapStore {
  int reservation_writes = 0;
  dorm::Result<void> put(std::string_view key, std::string_view value) override {
    if (key == keys::kStreamIds) ++reservation_writes;
    return MapStore::put(key, value);
  }
};

StreamIdReservation stored(const MapStore& store) {
  auto it = store.data.find(keys::kStreamIds);
  REQUIRE(it != store.data.end());
  auto r = StreamIdReservation::decode(it->second);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("stream ids: distinct across blocks, with one reservation write per block") {
  CountingStore store;
  StreamIds ids(store);
  std::set<std::uint64_t> seen;
  const std::uint64_t n = 2 * kStreamIdBlock + 5;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto id = ids.next();
    REQUIRE(id.ok());
    CHECK(seen.insert(*id).second);
  }
  CHECK(store.reservation_writes == 3);
  CHECK(stored(store).reserved == 3 * kStreamIdBlock);
  // Nothing but the reservation is written: the event log stores the streams.
  CHECK(store.data.size() == 1);
}

TEST_CASE("stream ids: a later activation never hands out an id an earlier one did") {
  MapStore store;
  std::set<std::uint64_t> seen;
  // Three activations, each stopping part-way through a block (as a dispose, crash or
  // reset leaves it): every id is still new.
  for (int activation = 0; activation < 3; ++activation) {
    StreamIds ids(store);
    for (int i = 0; i < 700; ++i) {
      auto id = ids.next();
      REQUIRE(id.ok());
      CHECK_MESSAGE(seen.insert(*id).second, "activation " << activation << ", stream " << i);
    }
  }
  // Each started at the stored reservation, with a block of its own: the unused rest of the
  // one before is skipped, not reused.
  CHECK(stored(store).reserved == 3 * kStreamIdBlock);
}

TEST_CASE("stream ids: the salt is drawn once per session and kept") {
  MapStore a;
  MapStore b;
  StreamIds first(a);
  StreamIds other(b);
  REQUIRE(first.next().ok());
  REQUIRE(other.next().ok());
  const auto salt = stored(a).salt;
  CHECK(salt != stored(b).salt);  // 64 random bits each
  StreamIds again(a);
  auto id = again.next();
  REQUIRE(id.ok());
  CHECK(stored(a).salt == salt);
  CHECK(*id == (salt ^ kStreamIdBlock));  // the first n of the second block
}

TEST_CASE("stream ids: forget() reads the reservation again") {
  MapStore store;
  StreamIds ids(store);
  REQUIRE(ids.next().ok());
  store.data.clear();  // the session's keys were erased
  ids.forget();
  auto id = ids.next();
  REQUIRE(id.ok());
  CHECK(stored(store).reserved == kStreamIdBlock);
  CHECK(*id == stored(store).salt);  // n = 0 under a new salt
}

TEST_CASE("stream ids: a malformed reservation is an error and nothing is written") {
  for (std::string bad : {"", "0123456789abcdef", "0123456789abcdef-0000000000000400",
                          "0123456789abcdef 00000000000004", "0123456789abcdeg 0000000000000400",
                          "0123456789abcdef 0000000000000400 "}) {
    CAPTURE(bad);
    MapStore store;
    store.data[std::string(keys::kStreamIds)] = bad;
    StreamIds ids(store);
    auto id = ids.next();
    REQUIRE_FALSE(id.ok());
    CHECK(id.error().code == ErrorCode::corruption);
    CHECK(store.data.size() == 1);
    CHECK(store.data.begin()->second == bad);
  }
}

TEST_CASE("stream ids: the reservation's text round-trips") {
  StreamIdReservation r{0xfedcba9876543210ULL, 3 * kStreamIdBlock};
  CHECK(r.encode() == "fedcba9876543210 0000000000000c00");
  auto back = StreamIdReservation::decode(r.encode());
  REQUIRE(back.ok());
  CHECK(back->salt == r.salt);
  CHECK(back->reserved == r.reserved);
}
