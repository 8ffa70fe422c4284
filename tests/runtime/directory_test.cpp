// The directory's table (runtime/src/directory.hpp): open addressing with backward-shift
// deletion, checked against std::map through long collision runs; and its LRU order.
#include "directory.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "numbered.hpp"

using namespace dorm;
using dorm::detail::Activation;
using dorm::detail::ActivationTable;

namespace {

// Ids from a runtime's codec (the table compares whole ids), with hashes chosen by the
// test: `home` sets the low bits the table indexes by, so entries pile up in long runs.
struct Ids {
  storage::MemoryBackend backend;
  std::unique_ptr<Runtime> runtime;
  Ids() {
    auto started = Runtime::start(backend);
    REQUIRE(started.ok());
    runtime = std::move(started).value();
  }
  ObjectId id(int i) { return runtime->id_from_name("t", dorm::testing::numbered("id-", i)); }
};

dorm::detail::ActivationRef make(Ids& ids, int i, std::uint64_t home) {
  // Distinct high bits, few distinct low bits.
  return dorm::detail::ActivationRef(
      new Activation(ids.id(i), (static_cast<std::uint64_t>(i) << 32) | home));
}

}  // namespace

TEST_CASE("directory table: random inserts and erases through collision runs match std::map") {
  Ids ids;
  bool tagged = true;
  SUBCASE("slots tagged with hash bits") {}
  SUBCASE("untagged slots (an address wider than 48 bits)") { tagged = false; }
  ActivationTable table(tagged);
  std::map<int, dorm::detail::ActivationRef> model;
  std::mt19937 rng(7);
  constexpr int kIds = 600;
  std::vector<dorm::detail::ActivationRef> all;
  // Five home slots for 600 ids: every probe crosses runs, and erasing from the middle of
  // a run must shift the rest back or later lookups stop early.
  for (int i = 0; i < kIds; ++i) all.push_back(make(ids, i, static_cast<std::uint64_t>(i % 5) * 3));
  for (int step = 0; step < 20'000; ++step) {
    int i = static_cast<int>(rng() % kIds);
    if (model.count(i)) {
      CHECK(table.erase(all[static_cast<std::size_t>(i)].get()));
      model.erase(i);
    } else {
      table.insert(all[static_cast<std::size_t>(i)]);
      model[i] = all[static_cast<std::size_t>(i)];
    }
    if (step % 997 == 0) {
      for (int k = 0; k < kIds; ++k) {
        const auto& act = all[static_cast<std::size_t>(k)];
        CHECK(table.find(act->hash, act->id) == (model.count(k) ? act.get() : nullptr));
      }
    }
  }
  CHECK(table.size() == model.size());
  std::size_t visited = 0;
  table.for_each([&](const Activation* act) {
    ++visited;
    CHECK(model.count(static_cast<int>(act->hash >> 32)) == 1);
  });
  CHECK(visited == model.size());
}

TEST_CASE(
    "directory table: erasing an activation that is not the entry of its id changes nothing") {
  Ids ids;
  bool tagged = true;
  SUBCASE("slots tagged with hash bits") {}
  SUBCASE("untagged slots (an address wider than 48 bits)") { tagged = false; }
  ActivationTable table(tagged);
  auto live = make(ids, 1, 0);
  auto stale = make(ids, 1, 0);  // same id and hash: an earlier activation of it
  table.insert(live);
  CHECK_FALSE(table.erase(stale.get()));
  CHECK(table.find(live->hash, live->id) == live.get());
  CHECK(table.erase(live.get()));
  CHECK(table.find(live->hash, live->id) == nullptr);
  CHECK(table.size() == 0);
}

TEST_CASE("directory LRU: oldest first, a touched one moves to the front, erased ones leave") {
  Ids ids;
  std::vector<dorm::detail::ActivationRef> acts;
  for (int i = 0; i < 4; ++i) acts.push_back(make(ids, i, 0));
  detail::Lru lru;
  for (auto& a : acts) lru.push_front(a.get());  // 3 2 1 0, oldest 0
  lru.move_to_front(acts[0].get());              // 0 3 2 1
  lru.erase(acts[2].get());                      // 0 3 1
  std::vector<Activation*> order;
  for (auto* a = lru.oldest(); a; a = a->lru_prev) order.push_back(a);
  CHECK(order == std::vector<Activation*>{acts[1].get(), acts[3].get(), acts[0].get()});
  lru.erase(acts[0].get());
  lru.erase(acts[1].get());
  lru.erase(acts[3].get());
  CHECK(lru.oldest() == nullptr);
}
