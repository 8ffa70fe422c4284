// TurnBatch: a turn reads its own writes, and lists merge them with storage correctly,
// whether the committed state beneath comes straight from the backend or from a cache.
#include "turn_batch.hpp"

#include "object_cache.hpp"

#include <doctest/doctest.h>

#include "dorm/storage/memory_backend.hpp"
#include "numbered.hpp"

using dorm::ObjectCache;
using dorm::TurnBatch;
using dorm::storage::MemoryBackend;
using dorm::storage::ScanOptions;
using dorm::storage::WriteBatch;

namespace {

std::vector<std::string> keys(const std::vector<dorm::storage::KeyValue>& kvs) {
  std::vector<std::string> out;
  for (auto& kv : kvs) out.push_back(kv.key + "=" + kv.value);
  return out;
}

void store(MemoryBackend& b, std::initializer_list<std::pair<const char*, const char*>> entries) {
  WriteBatch w;
  for (auto [k, v] : entries) w.put(k, v);
  REQUIRE(b.commit(w).ok());
}

// The committed state as a turn reads it: the backend itself, or a cache of every key.
std::size_t cache_bytes() {
  std::size_t bytes = 0;
  SUBCASE("uncached") { bytes = 0; }
  SUBCASE("cached") { bytes = 1024 * 1024; }
  return bytes;
}

}  // namespace

TEST_CASE("turn batch: reads see the turn's own puts, deletes and range deletes") {
  MemoryBackend backend;
  store(backend, {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}});
  auto committed = ObjectCache::make(backend, "", cache_bytes());
  TurnBatch t(*committed);
  t.put("a", "10");
  t.del("b");
  t.delete_range("c", "e");
  t.put("d", "40");  // re-created after the range delete
  CHECK(*t.get("a") == std::optional<std::string>("10"));
  CHECK_FALSE(t.get("b")->has_value());
  CHECK_FALSE(t.get("c")->has_value());
  CHECK(*t.get("d") == std::optional<std::string>("40"));
  // Storage itself is untouched until commit.
  CHECK(*backend.get("a") == std::optional<std::string>("1"));
  CHECK(keys(*t.scan(ScanOptions{})) == std::vector<std::string>{"a=10", "d=40"});
  REQUIRE(backend.commit(t.writes()).ok());
  CHECK(keys(*backend.scan(ScanOptions{})) == std::vector<std::string>{"a=10", "d=40"});
}

TEST_CASE("turn batch: limited and reverse scans merge overlay and storage in order") {
  MemoryBackend backend;
  WriteBatch w;
  for (int i = 0; i < 200; ++i) w.put(dorm::testing::numbered("k", 1000 + i), "s");
  REQUIRE(backend.commit(w).ok());
  auto committed = ObjectCache::make(backend, "", cache_bytes());
  TurnBatch t(*committed);
  // Delete the first 100 stored keys, add a few new ones in between.
  t.delete_range("k1000", "k1100");
  t.put("k1050x", "t");
  t.put("k1150x", "t");
  t.del("k1101");

  ScanOptions first3;
  first3.limit = 3;
  CHECK(keys(*t.scan(first3)) == std::vector<std::string>{"k1050x=t", "k1100=s", "k1102=s"});

  ScanOptions last3;
  last3.limit = 3;
  last3.reverse = true;
  CHECK(keys(*t.scan(last3)) == std::vector<std::string>{"k1199=s", "k1198=s", "k1197=s"});

  auto all = *t.scan(ScanOptions{});
  CHECK(all.size() == 100 - 1 + 2);
  ScanOptions after;
  after.start_after = "k1150";
  after.limit = 2;
  CHECK(keys(*t.scan(after)) == std::vector<std::string>{"k1150x=t", "k1151=s"});
}

namespace {

std::vector<std::string> ops(const WriteBatch& batch) {
  std::vector<std::string> out;
  for (auto op : batch) {
    switch (op.kind) {
      case WriteBatch::Kind::put: out.push_back("put " + std::string(op.key) + "=" + std::string(op.value)); break;
      case WriteBatch::Kind::del: out.push_back("del " + std::string(op.key)); break;
      case WriteBatch::Kind::delete_range:
        out.push_back("range " + std::string(op.key) + ".." + std::string(op.value));
        break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("turn batch: the commit writes each key once, and nothing for a key written and deleted where the store holds none") {
  MemoryBackend backend;
  store(backend, {{"a", "1"}});
  const bool cached = cache_bytes() > 0;
  auto committed = ObjectCache::make(backend, "", cached ? 1024 * 1024 : 0);
  TurnBatch t(*committed);
  REQUIRE(t.get("x")->has_value() == false);  // the cache now knows the whole (small) store
  t.put("k", "1");
  t.put("k", "2");
  t.del("x");         // absent before the turn
  t.put("j", "v");
  t.del("j");         // written and deleted within the turn
  t.del("a");         // stored: its delete must reach the store
  t.delete_range("m", "n");
  t.del("m1");        // already removed by the range delete
  CHECK(t.entries() == 8);  // what the limits count: every write asked for
  if (cached) {
    CHECK(ops(t.writes()) == std::vector<std::string>{"range m..n", "del a", "put k=2"});
  } else {
    // Without a cache nothing is known absent: the deletes stay (harmless, not free).
    CHECK(ops(t.writes()) ==
          std::vector<std::string>{"range m..n", "del a", "del j", "put k=2", "del x"});
  }
  REQUIRE(backend.commit(t.writes()).ok());
  committed->apply(t.writes());  // as ObjectStorage::commit does
  CHECK(keys(*backend.scan(ScanOptions{})) == std::vector<std::string>{"k=2"});

  // A turn whose writes all cancel out leaves nothing to commit (when that is known).
  t.clear();
  t.put("tmp", "1");
  t.del("tmp");
  CHECK_FALSE(t.empty());
  CHECK(t.writes().empty() == cached);
}
