// ObjectStorage: one activation's storage side, driven directly over a memory backend —
// the object's own key range, the limit rule (an oversized key or value is the caller's
// error, a batch over its totals fails the turn), alarms as a record plus an index entry
// written together, delete_all, and nothing reaching the backend before commit().
#include "object_storage.hpp"

#include <doctest/doctest.h>

#include "alarm_records.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/storage/memory_backend.hpp"

using dorm::Epoch;
using dorm::ErrorCode;
using dorm::IdCodec;
using dorm::ListOptions;
using dorm::ObjectId;
using dorm::StorageLimits;
using dorm::detail::ObjectStorage;
using dorm::storage::MemoryBackend;
using dorm::storage::ScanOptions;
namespace keys = dorm::keys;

namespace {

struct Fixture {
  MemoryBackend backend;
  StorageLimits limits;
  std::size_t cache_bytes = 1024 * 1024;  // as NamespaceOptions' default
  std::optional<dorm::detail::ObjectSettings> settings_;
  // The namespace's settings, made at the first storage (after a test chose cache_bytes).
  const dorm::detail::ObjectSettings& settings() {
    if (!settings_) settings_.emplace(dorm::detail::ObjectSettings{nullptr, backend, limits, cache_bytes});
    return *settings_;
  }
  IdCodec codec = IdCodec::create(std::string(IdCodec::kSecretBytes, 's')).value_or_throw();
  ObjectId a = codec.from_name("ns", "a");
  ObjectId b = codec.from_name("ns", "b");

  // Every key of the backend, in order.
  std::vector<std::string> stored() {
    std::vector<std::string> out;
    for (auto& kv : backend.scan(ScanOptions{}).value_or_throw()) out.push_back(kv.key);
    return out;
  }
  std::size_t alarm_index_entries() {
    return backend.scan(ScanOptions::with_prefix(keys::index_prefix(keys::kAlarmIndex))).value_or_throw().size();
  }
};

std::vector<std::string> listed(ObjectStorage& s, ListOptions options = {}) {
  std::vector<std::string> out;
  for (auto& kv : s.list(options).value_or_throw()) out.push_back(kv.key + "=" + kv.value);
  return out;
}

}  // namespace

TEST_CASE("object storage: writes reach the backend only at commit, under the object's own prefix") {
  Fixture f;
  ObjectStorage a(f.settings(), f.a, Epoch{1, 1});
  ObjectStorage b(f.settings(), f.b, Epoch{1, 2});
  REQUIRE(a.put("k1", "v1").ok());
  REQUIRE(a.put("k2", "v2").ok());
  REQUIRE(b.put("k1", "other").ok());
  CHECK(a.get("k1").value_or_throw() == "v1");  // the turn reads its own writes
  CHECK(f.stored().empty());
  REQUIRE(a.commit().ok());
  REQUIRE(b.commit().ok());
  CHECK(f.stored().size() == 3);
  const auto under_a = keys::object_prefix(f.a.ns(), f.a.body()) + keys::kObjectData;
  const auto under_b = keys::object_prefix(f.b.ns(), f.b.body()) + keys::kObjectData;
  for (const auto& key : f.stored()) CHECK((key.starts_with(under_a) || key.starts_with(under_b)));
  CHECK(listed(a) == std::vector<std::string>{"k1=v1", "k2=v2"});
  CHECK(listed(b) == std::vector<std::string>{"k1=other"});
  CHECK(a.del("k1").value_or_throw());
  CHECK_FALSE(a.del("missing").value_or_throw());
  a.discard();  // a failed turn: nothing of it is written
  CHECK(listed(a) == std::vector<std::string>{"k1=v1", "k2=v2"});
}

TEST_CASE("object storage: list narrows by prefix, start, end and limit, both directions") {
  Fixture f;
  ObjectStorage s(f.settings(), f.a, Epoch{1, 1});
  for (const char* k : {"a/1", "a/2", "a/3", "b/1"}) REQUIRE(s.put(k, "x").ok());
  ListOptions prefix;
  prefix.prefix = "a/";
  CHECK(listed(s, prefix).size() == 3);
  prefix.start = "a/2";
  CHECK(listed(s, prefix) == std::vector<std::string>{"a/2=x", "a/3=x"});
  prefix.end = "a/3";
  CHECK(listed(s, prefix) == std::vector<std::string>{"a/2=x"});
  ListOptions reverse;
  reverse.reverse = true;
  reverse.limit = 2;
  CHECK(listed(s, reverse) == std::vector<std::string>{"b/1=x", "a/3=x"});
  ListOptions empty;
  empty.start = "z";
  empty.end = "a";
  CHECK(listed(s, empty).empty());
}

TEST_CASE("object storage: an oversized key or value is the caller's error; a batch over its totals fails the turn") {
  Fixture f;
  f.limits.max_value_bytes = 8;
  f.limits.max_key_bytes = 4;
  f.limits.max_batch_entries = 3;
  ObjectStorage s(f.settings(), f.a, Epoch{1, 1});
  s.begin_turn();
  auto big = s.put("k", "123456789");
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == ErrorCode::limit_exceeded);
  CHECK(big.error().message.find("value of 9 bytes exceeds the limit of 8 bytes") != std::string::npos);
  CHECK(s.put("toolong", "v").error().code == ErrorCode::limit_exceeded);
  CHECK(s.get("toolong").error().code == ErrorCode::limit_exceeded);
  CHECK_FALSE(s.failure());  // the turn goes on
  CHECK(listed(s).empty());  // and nothing was written
  REQUIRE(s.put("a", "1").ok());
  REQUIRE(s.put("b", "2").ok());
  REQUIRE(s.put("c", "3").ok());
  auto over = s.put("d", "4");
  REQUIRE_FALSE(over.ok());
  REQUIRE(s.failure());
  CHECK(s.failure()->message.find("turn batch of 4 entries exceeds the limit of 3") != std::string::npos);
  s.discard();
  s.begin_turn();
  CHECK_FALSE(s.failure());
  CHECK(f.stored().empty());
}

TEST_CASE("object storage: an alarm is a record and an index entry, set, moved and deleted together") {
  Fixture f;
  ObjectStorage s(f.settings(), f.a, Epoch{3, 9});
  REQUIRE(s.set_alarm("late", 5'000).ok());
  REQUIRE(s.set_alarm("early", 1'000).ok());
  // What the scheduler is told after the commit: each index entry put, with its version.
  auto changes = s.take_alarm_changes();
  REQUIRE(changes.size() == 2);
  CHECK(dorm::detail::decode_index_key(changes[0].index_key)->name == "late");
  CHECK(dorm::detail::decode_index_key(changes[1].index_key)->name == "early");
  CHECK(dorm::detail::decode_index_key(changes[1].index_key)->due_ms == 1'000);
  REQUIRE(changes[1].version);
  CHECK(s.take_alarm_changes().empty());  // told once
  REQUIRE(s.commit().ok());
  CHECK(f.alarm_index_entries() == 2);
  auto record = s.read_alarm("early").value_or_throw();
  REQUIRE(record);
  CHECK(record->due_ms == 1'000);
  CHECK(record->version.starts_with("3.9."));  // the epoch that set it
  // Set again: a new version and due time, the old index entry gone in the same batch.
  REQUIRE(s.set_alarm("early", 2'000).ok());
  changes = s.take_alarm_changes();
  REQUIRE(changes.size() == 2);
  CHECK(dorm::detail::decode_index_key(changes[0].index_key)->due_ms == 1'000);
  CHECK_FALSE(changes[0].version);  // the old entry deleted
  CHECK(dorm::detail::decode_index_key(changes[1].index_key)->due_ms == 2'000);
  REQUIRE(s.commit().ok());
  CHECK(f.alarm_index_entries() == 2);
  CHECK(s.get_alarm("early").value_or_throw() == 2'000);
  CHECK(s.read_alarm("early").value_or_throw()->version != record->version);
  CHECK(changes[1].version == s.read_alarm("early").value_or_throw()->version);
  CHECK(s.delete_alarm("early").value_or_throw());
  CHECK_FALSE(s.delete_alarm("early").value_or_throw());
  changes = s.take_alarm_changes();
  REQUIRE(changes.size() == 1);
  CHECK(dorm::detail::decode_index_key(changes[0].index_key)->due_ms == 2'000);
  CHECK_FALSE(changes[0].version);
  REQUIRE(s.commit().ok());
  CHECK(f.alarm_index_entries() == 1);
  CHECK_FALSE(s.get_alarm("early").value_or_throw());
}

TEST_CASE("object storage: a discarded turn's alarm changes are not reported") {
  Fixture f;
  ObjectStorage s(f.settings(), f.a, Epoch{1, 1});
  REQUIRE(s.set_alarm("x", 10).ok());
  s.discard();
  CHECK(s.take_alarm_changes().empty());
  CHECK(f.alarm_index_entries() == 0);
}

TEST_CASE("object storage: delete_all removes the object's data, alarms and their index entries, and nothing else") {
  Fixture f;
  ObjectStorage a(f.settings(), f.a, Epoch{1, 1});
  ObjectStorage b(f.settings(), f.b, Epoch{1, 1});
  REQUIRE(a.put("k", "v").ok());
  REQUIRE(a.set_alarm("x", 10).ok());
  REQUIRE(a.index_put("app.things", "a", "1").ok());
  REQUIRE(b.put("k", "v").ok());
  REQUIRE(b.set_alarm("x", 20).ok());
  REQUIRE(a.commit().ok());
  REQUIRE(b.commit().ok());
  (void)a.take_alarm_changes();
  REQUIRE(a.delete_all().ok());
  auto changes = a.take_alarm_changes();  // the index entry's delete, for the scheduler
  REQUIRE(changes.size() == 1);
  CHECK(dorm::detail::decode_index_key(changes[0].index_key)->due_ms == 10);
  CHECK_FALSE(changes[0].version);
  REQUIRE(a.commit().ok());
  CHECK(listed(a).empty());
  CHECK_FALSE(a.get_alarm("x").value_or_throw());
  CHECK(f.alarm_index_entries() == 1);  // b's
  CHECK(listed(b) == std::vector<std::string>{"k=v"});
  // Runtime-index entries belong to the index, not the object: delete_all leaves them.
  CHECK(f.backend.get(keys::index_entry("app.things", "a")).value_or_throw() == "1");
}

namespace {

// Counts the operations of each kind in the batches it commits.
class CountingKinds final : public dorm::storage::BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  dorm::Result<void> commit(const dorm::storage::WriteBatch& batch) override {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto kind = batch.op(i).kind;
      if (kind == dorm::storage::WriteBatch::Kind::del) ++point_deletes;
      if (kind == dorm::storage::WriteBatch::Kind::delete_range) ++range_deletes;
    }
    return BackendWrapper::commit(batch);
  }
  int point_deletes = 0;
  int range_deletes = 0;
};

}  // namespace

TEST_CASE("object storage: delete_all deletes a small object key by key and a large one as a range") {
  // A range tombstone makes every later read of a RocksDB memtable slower, not only reads
  // of its range; objects that live for one request must not leave one each.
  Fixture f;
  CountingKinds counting(f.backend);
  dorm::detail::ObjectSettings settings{nullptr, counting, f.limits, f.cache_bytes};
  for (int keys : {3, 400}) {
    CAPTURE(keys);
    ObjectStorage s(settings, keys == 3 ? f.a : f.b, Epoch{1, 1});
    for (int i = 0; i < keys; ++i) REQUIRE(s.put("k" + std::to_string(i), "v").ok());
    REQUIRE(s.commit().ok());
    REQUIRE(s.put("written-in-this-turn", "v").ok());
    counting.point_deletes = counting.range_deletes = 0;
    REQUIRE(s.delete_all().ok());
    REQUIRE(s.commit().ok());
    CHECK(listed(s).empty());
    if (keys == 3) {
      CHECK(counting.point_deletes >= 3);  // the key written in this turn may never reach the store
      CHECK(counting.range_deletes == 0);
    } else {
      CHECK(counting.range_deletes == 1);
    }
  }
  CHECK(f.stored().empty());
}

TEST_CASE("object storage: runtime index names are checked, and dorm.* is reserved") {
  Fixture f;
  ObjectStorage s(f.settings(), f.a, Epoch{1, 1});
  REQUIRE(s.index_put("app.things", "k", "v").ok());
  REQUIRE(s.index_del("app.things", "gone").ok());
  auto reserved = s.index_put("dorm.alarms", "k", "v");
  REQUIRE_FALSE(reserved.ok());
  CHECK(reserved.error().code == ErrorCode::invalid_argument);
  CHECK(reserved.error().message.find("not starting with 'dorm.'") != std::string::npos);
  CHECK(s.failure());  // a bad index name is a defect of the object: the turn fails
}

TEST_CASE("object storage: an object that only writes holds no cache; its first read makes one") {
  Fixture f;
  ObjectStorage s(f.settings(), f.a, Epoch{1, 1});
  REQUIRE(s.put("k", "v").ok());
  REQUIRE(s.index_put("things", "a", "1").ok());
  REQUIRE(s.commit().ok());
  CHECK_FALSE(s.has_cache());  // a resident object that read nothing pays nothing for it
  CHECK(s.get("k").value_or_throw() == "v");  // from the store: the commit was not cached
  CHECK(s.has_cache());
  REQUIRE(s.commit().ok());
  CHECK(s.cache_bytes() > 0);
  // Setting an alarm reads its record first, so it makes a cache as any read does.
  ObjectStorage t(f.settings(), f.b, Epoch{1, 2});
  REQUIRE(t.set_alarm("x", 1'000).ok());
  CHECK(t.has_cache());
  t.discard();
}
