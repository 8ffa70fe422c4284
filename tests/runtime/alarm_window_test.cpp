// AlarmWindow: the scheduler's in-memory part of the alarm index. It holds exactly the
// entries below its horizon, learns the rest page by page, takes committed changes below
// the horizon only, and stays within its capacity by giving up its last entries.
#include "alarm_window.hpp"

#include <doctest/doctest.h>

#include <limits>

#include "numbered.hpp"

using dorm::detail::AlarmIndexChange;
using dorm::detail::AlarmIndexKey;
using dorm::detail::AlarmWindow;
using dorm::storage::KeyValue;

namespace {

// An index key due at `due` for alarm `name` of one object.
std::string key(std::int64_t due, const std::string& name = "a") {
  return dorm::detail::encode_index_key(AlarmIndexKey{due, "ns", std::string(16, 'b'), name});
}

std::vector<std::int64_t> dues(const AlarmWindow& w) {
  std::vector<std::int64_t> out;
  for (const auto& [k, v] : w.entries()) out.push_back(*dorm::detail::decode_due(k));
  return out;
}

std::vector<KeyValue> page(std::initializer_list<std::int64_t> due_times) {
  std::vector<KeyValue> out;
  for (auto due : due_times) out.push_back({key(due), dorm::testing::numbered("v", due)});
  return out;
}

}  // namespace

TEST_CASE("alarm window: knows nothing at first, so its horizon is due at once") {
  AlarmWindow w(4);
  REQUIRE(w.horizon());
  CHECK(*w.horizon() == "");
  CHECK(w.horizon_due() == std::numeric_limits<std::int64_t>::min());
  // A change before the first read is beyond the horizon: the read will find it.
  w.apply({key(10), "v"});
  CHECK(w.entries().empty());
  CHECK(w.room() == 4);
}

TEST_CASE("alarm window: a short page completes it; then every change counts") {
  AlarmWindow w(4);
  w.fill(page({10, 20}), true);
  CHECK_FALSE(w.horizon());
  CHECK_FALSE(w.horizon_due());
  CHECK(dues(w) == std::vector<std::int64_t>{10, 20});
  w.apply({key(5), "v5"});
  w.apply({key(20), std::nullopt});
  w.apply({key(30), "v30"});
  CHECK(dues(w) == std::vector<std::int64_t>{5, 10, 30});
  CHECK(w.entries().at(key(5)) == "v5");
  // Re-arming to the same key with a new version replaces the version.
  w.apply({key(5), "v5b"});
  CHECK(w.entries().at(key(5)) == "v5b");
}

TEST_CASE("alarm window: a full page moves the horizon just past it; changes beyond are left to the store") {
  AlarmWindow w(3);
  w.fill(page({10, 20, 30}), false);
  REQUIRE(w.horizon());
  CHECK(*w.horizon() == key(30) + '\0');
  CHECK(w.horizon_due() == 30);
  w.apply({key(40), "v40"});         // beyond: not held
  w.apply({key(35), std::nullopt});  // beyond: nothing to do
  w.apply({key(20), std::nullopt});  // below: held, so forgotten
  CHECK(dues(w) == std::vector<std::int64_t>{10, 30});
  CHECK(w.room() == 1);
  // The next page starts at the horizon.
  w.fill(page({40}), true);
  CHECK(dues(w) == std::vector<std::int64_t>{10, 30, 40});
  CHECK_FALSE(w.horizon());
}

TEST_CASE("alarm window: over capacity it gives up its last entry, which becomes the horizon") {
  AlarmWindow w(3);
  w.fill(page({10, 20, 30}), true);
  w.apply({key(15), "v15"});
  CHECK(dues(w) == std::vector<std::int64_t>{10, 15, 20});
  REQUIRE(w.horizon());
  CHECK(*w.horizon() == key(30));  // 30 is stored, so the store is asked from there on
  CHECK(w.horizon_due() == 30);
  // A put at or after the new horizon is the store's again.
  w.apply({key(30, "b"), "v"});
  CHECK(dues(w) == std::vector<std::int64_t>{10, 15, 20});
  // Memory stays bounded however many changes come.
  for (std::int64_t due = 1; due <= 1000; ++due) w.apply({key(due, "many"), "v"});
  CHECK(w.entries().size() == 3);
  CHECK(dues(w) == std::vector<std::int64_t>{1, 2, 3});
  CHECK(w.horizon_due() == 4);
}

TEST_CASE("alarm window: forget drops only the version it names") {
  AlarmWindow w(4);
  w.fill(page({10}), true);
  w.forget(key(10), "other");
  CHECK(w.entries().size() == 1);
  w.forget(key(10), "v10");
  CHECK(w.entries().empty());
}
