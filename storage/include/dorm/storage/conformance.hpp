// The backend conformance kit: doctest cases every Backend must pass.
//
// Include <doctest/doctest.h> first, then this header, and instantiate the kit once per
// backend in a doctest binary:
//
//   DORM_BACKEND_CONFORMANCE("mystore", (dorm::storage::conformance::Factory{
//       [](const std::string& dir) -> dorm::Result<std::unique_ptr<dorm::storage::Backend>> {
//         return MyStore::open(dir + "/db");
//       }}))
//
// `open(dir)` opens the store kept under `dir`: an empty directory the first time, and the
// same directory again when a case closes the store and reopens it. Each case gets a
// fresh `dir`. A store that keeps nothing across close (like memory:) uses
// DORM_VOLATILE_BACKEND_CONFORMANCE, which leaves out the two close-and-reopen cases.
//
// What the kit checks is the contract written in backend.hpp: byte-wise key order for any
// bytes, prefix and range scans in both directions with limits and start-after, empty
// values, batch semantics with range deletes, one-point-in-time reads while commits run
// concurrently, and durability of acknowledged commits across close and reopen.
// docs/custom-backend.md walks through using it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"

#ifndef DOCTEST_LIBRARY_INCLUDED
#error "include <doctest/doctest.h> before dorm/storage/conformance.hpp"
#endif

namespace dorm::storage::conformance {

struct Factory {
  std::function<Result<std::unique_ptr<Backend>>(const std::string& dir)> open;
};

// A fresh directory for one case, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "dorm-conformance-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::unique_ptr<Backend> must_open(const Factory& f, const std::string& dir) {
  auto opened = f.open(dir);
  if (!opened.ok()) FAIL("open failed: " << opened.error().describe());
  return std::move(opened).value();
}

inline void must_commit(Backend& b, const WriteBatch& batch) {
  auto r = b.commit(batch);
  if (!r.ok()) FAIL("commit failed: " << r.error().describe());
}

inline std::vector<KeyValue> must_scan(Backend& b, const ScanOptions& options) {
  auto r = b.scan(options);
  if (!r.ok()) FAIL("scan failed: " << r.error().describe());
  return std::move(r).value();
}

inline std::vector<std::string> keys_of(const std::vector<KeyValue>& kvs) {
  std::vector<std::string> keys;
  for (const auto& kv : kvs) keys.push_back(kv.key);
  return keys;
}

inline std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

// Keys with every awkward byte, in the order a correct store returns them.
inline std::vector<std::string> binary_keys_in_order() {
  return {bytes({0x00}),       bytes({0x00, 0x00}), bytes({0x00, 0xff}), bytes({0x01}),
          "a",                 bytes({'a', 0x00}),  "ab",                bytes({'a', 0x7f}),
          bytes({'a', 0x80}),  bytes({'a', 0xff}),  "b",                 bytes({0x7f}),
          bytes({0x80}),       bytes({0xfe, 0xff}), bytes({0xff}),       bytes({0xff, 0x00}),
          bytes({0xff, 0xff}), bytes({0xff, 0xff, 0xff})};
}

inline void put_all(Backend& b, const std::vector<std::string>& keys) {
  WriteBatch batch;
  // Insert in reverse so the store cannot pass by keeping insertion order.
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) batch.put(*it, "v:" + *it);
  must_commit(b, batch);
}

inline void binary_key_order(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  auto keys = binary_keys_in_order();
  put_all(*b, keys);
  CHECK(keys_of(must_scan(*b, {})) == keys);
  ScanOptions reverse;
  reverse.reverse = true;
  auto reversed = keys;
  std::reverse(reversed.begin(), reversed.end());
  CHECK(keys_of(must_scan(*b, reverse)) == reversed);
  for (const auto& k : keys) {
    auto v = b->get(k);
    REQUIRE(v.ok());
    REQUIRE(v->has_value());
    CHECK(**v == "v:" + k);
  }
  auto missing = b->get(bytes({'a', 0x01}));
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
}

inline void prefix_scans(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  put_all(*b, {"a", "ab", "abc", bytes({'a', 'b', 'c', 0x00}), bytes({'a', 'b', 'c', 0xff}),
               "abcd", "abd", bytes({'a', 0xff}), bytes({'a', 0xff, 0x00}),
               bytes({'a', 0xff, 0xff}), "b", bytes({0xff}), bytes({0xff, 0xff, 0x01})});
  // Keys shorter than the prefix ("a", "ab") and keys past it ("abd") are excluded.
  CHECK(keys_of(must_scan(*b, ScanOptions::with_prefix("abc"))) ==
        std::vector<std::string>{"abc", bytes({'a', 'b', 'c', 0x00}), "abcd",
                                 bytes({'a', 'b', 'c', 0xff})});
  // A prefix ending in 0xFF: its successor is computed by carrying, not by appending.
  CHECK(keys_of(must_scan(*b, ScanOptions::with_prefix(bytes({'a', 0xff})))) ==
        std::vector<std::string>{bytes({'a', 0xff}), bytes({'a', 0xff, 0x00}),
                                 bytes({'a', 0xff, 0xff})});
  // A prefix of only 0xFF bytes has no successor: the scan runs to the end.
  CHECK(keys_of(must_scan(*b, ScanOptions::with_prefix(bytes({0xff, 0xff})))) ==
        std::vector<std::string>{bytes({0xff, 0xff, 0x01})});
  // Reverse prefix scan with a limit takes the largest keys first.
  auto rev = ScanOptions::with_prefix("abc");
  rev.reverse = true;
  rev.limit = 2;
  CHECK(keys_of(must_scan(*b, rev)) ==
        std::vector<std::string>{bytes({'a', 'b', 'c', 0xff}), "abcd"});
  CHECK(must_scan(*b, ScanOptions::with_prefix("zzz")).empty());
}

inline void ranges_limits_and_start_after(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  std::vector<std::string> keys;
  for (char c = 'a'; c <= 'j'; ++c) keys.push_back(std::string(1, c));
  put_all(*b, keys);

  ScanOptions range;
  range.start = "c";
  range.end = "g";
  CHECK(keys_of(must_scan(*b, range)) == std::vector<std::string>{"c", "d", "e", "f"});
  range.limit = 2;
  CHECK(keys_of(must_scan(*b, range)) == std::vector<std::string>{"c", "d"});
  range.reverse = true;
  CHECK(keys_of(must_scan(*b, range)) == std::vector<std::string>{"f", "e"});

  // start_after resumes past a key, forward and reverse, inside the range.
  ScanOptions after;
  after.start = "c";
  after.end = "g";
  after.start_after = "d";
  CHECK(keys_of(must_scan(*b, after)) == std::vector<std::string>{"e", "f"});
  after.reverse = true;
  CHECK(keys_of(must_scan(*b, after)) == std::vector<std::string>{"c"});
  // A start_after outside the range changes nothing, or empties it.
  after.reverse = false;
  after.start_after = "a";
  CHECK(keys_of(must_scan(*b, after)) == std::vector<std::string>{"c", "d", "e", "f"});
  after.start_after = "z";
  CHECK(must_scan(*b, after).empty());
  // start_after need not be a stored key.
  after.start_after = "d5";
  CHECK(keys_of(must_scan(*b, after)) == std::vector<std::string>{"e", "f"});

  // Paging with limit + start_after visits every key once, in both directions.
  for (bool reverse : {false, true}) {
    ScanOptions page;
    page.limit = 3;
    page.reverse = reverse;
    std::vector<std::string> seen;
    for (int guard = 0; guard < 10; ++guard) {
      auto chunk = must_scan(*b, page);
      if (chunk.empty()) break;
      for (auto& kv : chunk) seen.push_back(kv.key);
      page.start_after = chunk.back().key;
    }
    auto expected = keys;
    if (reverse) std::reverse(expected.begin(), expected.end());
    CHECK(seen == expected);
  }

  // An empty range and an inverted one.
  ScanOptions empty;
  empty.start = "e";
  empty.end = "e";
  CHECK(must_scan(*b, empty).empty());
  ScanOptions inverted;
  inverted.start = "f";
  inverted.end = "c";
  auto bad = b->scan(inverted);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::invalid_argument);
}

inline void batches_and_range_deletes(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  std::vector<std::string> keys;
  for (char c = 'a'; c <= 'h'; ++c) keys.push_back(std::string(1, c));
  put_all(*b, keys);

  WriteBatch batch;
  batch.delete_range("b", "e");  // removes b, c, d; keeps e
  batch.put("c", "again");       // later operations win over earlier ones
  batch.put("x", "1");
  batch.del("x");
  batch.del("y");  // deleting a missing key is fine
  batch.put("z", "1");
  batch.put("z", "2");
  must_commit(*b, batch);
  CHECK(keys_of(must_scan(*b, {})) ==
        std::vector<std::string>{"a", "c", "e", "f", "g", "h", "z"});
  CHECK(**b->get("c") == "again");
  CHECK(**b->get("z") == "2");

  // A range delete across binary keys, including an empty begin.
  WriteBatch wipe;
  wipe.delete_range("", "f");
  must_commit(*b, wipe);
  CHECK(keys_of(must_scan(*b, {})) == std::vector<std::string>{"f", "g", "h", "z"});

  // An invalid batch is rejected whole.
  WriteBatch invalid;
  invalid.put("new", "1");
  invalid.delete_range("h", "g");
  auto r = b->commit(invalid);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::invalid_argument);
  CHECK_FALSE(b->get("new")->has_value());

  // Empty batches and equal-bound range deletes are no-ops.
  must_commit(*b, WriteBatch{});
  WriteBatch noop;
  noop.delete_range("g", "g");
  must_commit(*b, noop);
  CHECK(keys_of(must_scan(*b, {})) == std::vector<std::string>{"f", "g", "h", "z"});
}

inline void empty_values_and_get_many(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  WriteBatch batch;
  batch.put("empty", "");
  batch.put("zero", std::string(3, '\0'));
  batch.put("big", std::string(100'000, 'x'));
  must_commit(*b, batch);
  auto empty = b->get("empty");
  REQUIRE(empty.ok());
  REQUIRE(empty->has_value());  // present with an empty value, not absent
  CHECK((*empty)->empty());
  CHECK(**b->get("zero") == std::string(3, '\0'));
  CHECK((*b->get("big"))->size() == 100'000);
  auto all = must_scan(*b, {});
  REQUIRE(all.size() == 3);
  CHECK(all[1] == KeyValue{"empty", ""});

  std::vector<std::string> keys{"zero", "missing", "empty", "zero"};
  auto many = b->get_many(keys);
  REQUIRE(many.ok());
  REQUIRE(many->size() == 4);
  CHECK((*many)[0] == std::optional<std::string>(std::string(3, '\0')));
  CHECK_FALSE((*many)[1].has_value());
  CHECK((*many)[2] == std::optional<std::string>(""));
  CHECK((*many)[3] == (*many)[0]);
  CHECK(b->get_many(std::vector<std::string>{})->empty());
}

inline void thousand_object_prefixes(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  auto object_prefix = [](int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "obj/%04d/", i);
    return std::string(buf);
  };
  WriteBatch batch;
  for (int i = 0; i < 1000; ++i) {
    for (const char* k : {"a", "b", "c"}) batch.put(object_prefix(i) + k, std::to_string(i));
  }
  batch.put("obi", "before");
  batch.put("obk", "after");
  must_commit(*b, batch);

  auto everything = must_scan(*b, ScanOptions::with_prefix("obj/"));
  REQUIRE(everything.size() == 3000);
  CHECK(std::is_sorted(everything.begin(), everything.end(),
                       [](const KeyValue& x, const KeyValue& y) { return x.key < y.key; }));
  CHECK(everything.front().key == "obj/0000/a");
  CHECK(everything.back().key == "obj/0999/c");

  for (int i : {0, 1, 499, 998, 999}) {
    auto one = must_scan(*b, ScanOptions::with_prefix(object_prefix(i)));
    REQUIRE(one.size() == 3);
    for (auto& kv : one) CHECK(kv.value == std::to_string(i));
  }
  // The last few objects, newest first, as an index scan would read them.
  auto tail = ScanOptions::with_prefix("obj/");
  tail.reverse = true;
  tail.limit = 4;
  CHECK(keys_of(must_scan(*b, tail)) ==
        std::vector<std::string>{"obj/0999/c", "obj/0999/b", "obj/0999/a", "obj/0998/c"});
}

inline void concurrent_readers_see_whole_batches(const Factory& f) {
  ScratchDir dir;
  auto b = must_open(f, dir.path());
  constexpr int kKeys = 20;
  constexpr int kBatches = 200;
  auto key = [](int i) { return "group/" + std::to_string(100 + i); };
  // Batch n sets every key of the group to n, and adds member n.
  auto write = [&](int n) {
    WriteBatch batch;
    for (int i = 0; i < kKeys; ++i) batch.put(key(i), std::to_string(n));
    batch.put("members/" + std::to_string(100000 + n), std::to_string(n));
    must_commit(*b, batch);
  };
  write(0);
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int> scans{0};
  std::atomic<int> multi_gets{0};
  auto reader = [&](bool use_get_many, std::atomic<int>& reads) {
    std::vector<std::string> keys;
    for (int i = 0; i < kKeys; ++i) keys.push_back(key(i));
    while (!done.load()) {
      std::vector<std::string> values;
      if (use_get_many) {
        auto r = b->get_many(keys);
        if (!r.ok()) { ++torn; continue; }
        for (auto& v : *r) values.push_back(v.value_or("<missing>"));
      } else {
        auto r = b->scan(ScanOptions::with_prefix("group/"));
        if (!r.ok() || r->size() != kKeys) { ++torn; continue; }
        for (auto& kv : *r) values.push_back(kv.value);
      }
      if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) !=
          values.end()) {
        ++torn;
      }
      ++reads;
    }
  };
  std::thread r1(reader, false, std::ref(scans));
  std::thread r2(reader, true, std::ref(multi_gets));
  // The readers must really overlap the writes: start writing once both have read, and
  // keep writing until both have read a few more times (bounded, in case one starves).
  constexpr int kOverlap = 20;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((scans.load() == 0 || multi_gets.load() == 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  int scans_before = scans.load();
  int gets_before = multi_gets.load();
  int n = 1;
  while ((n <= kBatches || scans.load() < scans_before + kOverlap ||
          multi_gets.load() < gets_before + kOverlap) &&
         std::chrono::steady_clock::now() < deadline) {
    write(n++);
  }
  done = true;
  r1.join();
  r2.join();
  CHECK(torn.load() == 0);
  CHECK(scans.load() >= scans_before + kOverlap);
  CHECK(multi_gets.load() >= gets_before + kOverlap);
  CHECK(scans_before > 0);
  CHECK(gets_before > 0);
  int last = n - 1;  // batches 0..last were written
  CHECK(last >= kBatches);
  CHECK(must_scan(*b, ScanOptions::with_prefix("members/")).size() ==
        static_cast<std::size_t>(last + 1));
  CHECK(**b->get(key(0)) == std::to_string(last));
}

inline void close_and_reopen(const Factory& f) {
  ScratchDir dir;
  auto keys = binary_keys_in_order();
  {
    auto b = must_open(f, dir.path());
    put_all(*b, keys);
    WriteBatch more;
    more.del(bytes({0x01}));
    more.put("empty", "");
    must_commit(*b, more);
  }
  auto b = must_open(f, dir.path());
  keys.erase(std::find(keys.begin(), keys.end(), bytes({0x01})));
  keys.push_back("empty");
  std::sort(keys.begin(), keys.end());
  CHECK(keys_of(must_scan(*b, {})) == keys);
  CHECK(b->get("empty")->has_value());
}

inline void acknowledged_commits_survive_reopen(const Factory& f) {
  ScratchDir dir;
  constexpr int kCommits = 300;
  {
    auto b = must_open(f, dir.path());
    for (int n = 0; n < kCommits; ++n) {
      WriteBatch batch;
      batch.put("ack/" + std::to_string(10000 + n), std::string(static_cast<std::size_t>(n), 'v'));
      if (n > 0 && n % 10 == 0) batch.del("ack/" + std::to_string(10000 + n - 5));
      must_commit(*b, batch);
    }
  }
  for (int round = 0; round < 2; ++round) {  // twice: a reopen must not lose anything either
    auto b = must_open(f, dir.path());
    auto all = must_scan(*b, ScanOptions::with_prefix("ack/"));
    CHECK(all.size() == kCommits - (kCommits - 1) / 10);
    CHECK(**b->get("ack/10299") == std::string(299, 'v'));
    CHECK_FALSE(b->get("ack/10285")->has_value());
  }
}

}  // namespace dorm::storage::conformance

#define DORM_CONFORMANCE_CASE_(NAME, FACTORY, TITLE, FN) \
  TEST_CASE(NAME " conformance: " TITLE) { ::dorm::storage::conformance::FN(FACTORY); }

// Registers the kit's doctest cases for one backend. NAME is a string literal; FACTORY an
// expression of type dorm::storage::conformance::Factory (parenthesize it if it has commas).
#define DORM_BACKEND_CONFORMANCE(NAME, FACTORY)                                                \
  DORM_VOLATILE_BACKEND_CONFORMANCE(NAME, FACTORY)                                             \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "close and reopen", close_and_reopen)                  \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "acknowledged commits survive reopen",                 \
                         acknowledged_commits_survive_reopen)

// The kit without the close-and-reopen cases, for a store that keeps nothing across close
// (such as memory:).
#define DORM_VOLATILE_BACKEND_CONFORMANCE(NAME, FACTORY)                                       \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "byte-wise order of binary keys", binary_key_order)    \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "prefix scans", prefix_scans)                          \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "ranges, limits and start-after",                      \
                         ranges_limits_and_start_after)                                        \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "batches and range deletes", batches_and_range_deletes) \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "empty values and get_many", empty_values_and_get_many) \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "a scan across 1,000 object prefixes",                 \
                         thousand_object_prefixes)                                             \
  DORM_CONFORMANCE_CASE_(NAME, FACTORY, "concurrent readers see whole batches",                \
                         concurrent_readers_see_whole_batches)
