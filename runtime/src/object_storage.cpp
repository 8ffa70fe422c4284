#include "object_storage.hpp"

#include <atomic>
#include <utility>

#include "dorm/runtime/keys.hpp"

namespace dorm::detail {
namespace {

const std::optional<Error> kNoFailure;

// The last part of an alarm's version: the epoch already names the activation, and a
// number no other set_alarm of this process had makes each of its versions distinct
// (versions are only compared for equality). Process-wide rather than per object: one
// counter fewer in every resident object.
std::uint64_t next_alarm_sequence() {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

Error limit_error(std::string_view what, std::size_t size, std::size_t limit) {
  return Error{ErrorCode::limit_exceeded, std::string(what) + " of " + std::to_string(size) +
                                              " bytes exceeds the limit of " +
                                              std::to_string(limit) + " bytes"};
}

}  // namespace

ObjectStorage::ObjectStorage(const ObjectSettings& settings, const ObjectId& id, Epoch epoch)
    : settings_(settings), id_(id), epoch_(epoch) {}

ObjectStorage::~ObjectStorage() { end_turn(); }

TurnScratch& ObjectStorage::turn() {
  if (!turn_) turn_ = take_turn_scratch();
  return *turn_;
}

TurnBatch& ObjectStorage::reading() {
  if (!cache_) {
    cache_ = ObjectCache::make(settings_.backend, root(), settings_.cache_bytes, settings_.uncached);
  }
  auto& batch = turn().batch;
  batch.bind(cache_.get());
  return batch;
}

TurnBatch& ObjectStorage::writing() {
  auto& batch = turn().batch;
  batch.bind(cache_.get());
  return batch;
}

void ObjectStorage::end_turn() { give_turn_scratch(std::move(turn_)); }

const std::optional<Error>& ObjectStorage::failure() const {
  return turn_ ? turn_->failure : kNoFailure;
}

Result<void> ObjectStorage::fail_turn(Error error) {
  auto& failure = turn().failure;
  if (!failure) failure = error;
  return error;
}

std::vector<AlarmIndexChange> ObjectStorage::take_alarm_changes() {
  if (!turn_) return {};
  return std::exchange(turn_->alarm_changes, {});
}

Result<void> ObjectStorage::check_write(std::size_t key_bytes, std::size_t value_bytes) {
  // One key or value over its limit is the caller's input: refused, nothing written, and
  // the turn goes on, so the caller can answer with a clear error (a tool that stores too
  // much gets an error result; its session is not reset). The batch's totals are the
  // turn's own: over them, the turn cannot commit as a whole, so it fails
  // (docs/architecture.md#errors).
  if (key_bytes > settings_.limits.max_key_bytes) return limit_error("key", key_bytes, settings_.limits.max_key_bytes);
  if (value_bytes > settings_.limits.max_value_bytes) {
    return limit_error("value", value_bytes, settings_.limits.max_value_bytes);
  }
  auto& batch = writing();
  if (batch.entries() + 1 > settings_.limits.max_batch_entries) {
    return fail_turn(Error{ErrorCode::limit_exceeded,
                           "turn batch of " + std::to_string(batch.entries() + 1) +
                               " entries exceeds the limit of " +
                               std::to_string(settings_.limits.max_batch_entries) + " entries"});
  }
  // The data prefix: the namespace, the 16-byte body and three separator bytes.
  std::size_t bytes = batch.bytes() + id_.ns().size() + ObjectId::kBodyBytes + 3 + key_bytes +
                      value_bytes;
  if (bytes > settings_.limits.max_batch_bytes) {
    return fail_turn(limit_error("turn batch", bytes, settings_.limits.max_batch_bytes));
  }
  return {};
}

Result<void> ObjectStorage::check_index(std::string_view index) {
  if (keys::valid_user_index(index)) return {};
  return fail_turn(Error{ErrorCode::invalid_argument,
                         "invalid index name '" + std::string(index) +
                             "': use 1-64 of [a-z0-9._-], not starting with 'dorm.'"});
}

// ---- the object's own keys ----

Result<std::optional<std::string>> ObjectStorage::get(std::string_view key) {
  if (key.size() > settings_.limits.max_key_bytes) return limit_error("key", key.size(), settings_.limits.max_key_bytes);
  return reading().get(full_key(key));
}

Result<std::vector<std::optional<std::string>>> ObjectStorage::get_many(
    std::span<const std::string> keys) {
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (const auto& k : keys) {
    auto v = get(k);
    if (!v) return std::move(v).error();
    out.push_back(std::move(*v));
  }
  return out;
}

Result<void> ObjectStorage::put(std::string_view key, std::string_view value) {
  if (auto ok = check_write(key.size(), value.size()); !ok) return ok;
  writing().put(full_key(key), std::string(value));
  return {};
}

Result<bool> ObjectStorage::del(std::string_view key) {
  auto existing = get(key);
  if (!existing) return std::move(existing).error();
  if (auto ok = check_write(key.size(), 0); !ok) return std::move(ok).error();
  writing().del(full_key(key));
  return existing->has_value();
}

Result<std::vector<storage::KeyValue>> ObjectStorage::list(const ListOptions& options) {
  // The object's own range, narrowed by the prefix and then by start/end.
  const std::string prefix = data_prefix();
  std::string lower = prefix + options.prefix;
  std::optional<std::string> upper = storage::ScanOptions::prefix_successor(lower);
  if (options.start && prefix + *options.start > lower) lower = prefix + *options.start;
  if (options.end) {
    std::string end = prefix + *options.end;
    if (!upper || end < *upper) upper = end;
  }
  storage::ScanOptions scan;
  scan.start = lower;
  scan.end = upper;
  if (scan.end && *scan.end < scan.start) scan.end = scan.start;  // an empty range
  if (options.start_after) scan.start_after = prefix + *options.start_after;
  scan.reverse = options.reverse;
  scan.limit = options.limit;
  auto rows = reading().scan(scan);
  if (!rows) return std::move(rows).error();
  for (auto& kv : *rows) kv.key.erase(0, prefix.size());
  return rows;
}

// Up to this many keys, delete_all() deletes an object's keys one by one instead of as one
// range. RocksDB's reads fragment every range tombstone still in the memtable (each
// iterator, each point read that reaches it), so when objects that live for one request or
// one paused execution ended with a range each, every read in the store grew slower with
// each such object since the last flush: `dorm bench execute` lost half its speed over 8
// rounds of 1,500 of them. A few hundred point tombstones cost nothing outside their range.
constexpr std::size_t kPointDeleteLimit = 256;

Result<void> ObjectStorage::delete_all() {
  if (auto ok = check_write(0, 0); !ok) return ok;
  // Alarms first: their index entries live outside the object's prefix.
  const std::string root = this->root();
  std::string alarms = root + keys::kObjectAlarm;
  auto records = reading().scan(storage::ScanOptions::with_prefix(alarms));
  if (!records) return fail_turn(std::move(records).error());
  for (auto& kv : *records) {
    auto record = decode_record(kv.value);
    if (record) remove_alarm(std::string_view(kv.key).substr(alarms.size()), *record);
  }
  // A small object's keys are deleted one by one: a range tombstone costs every later read
  // of the store, not only reads of this range (see kPointDeleteLimit).
  storage::ScanOptions everything = storage::ScanOptions::with_prefix(root);
  everything.limit = kPointDeleteLimit + 1;
  auto keys = reading().scan(everything);
  if (!keys) return fail_turn(std::move(keys).error());
  if (keys->size() <= kPointDeleteLimit) {
    for (auto& kv : *keys) writing().del(std::move(kv.key));
  } else {
    writing().delete_range(root, *storage::ScanOptions::prefix_successor(root));
  }
  return {};
}

// ---- alarms ----

std::string ObjectStorage::alarm_key(std::string_view name) const {
  return (root() + keys::kObjectAlarm).append(name);
}

std::string ObjectStorage::alarm_index_key(std::string_view name, std::int64_t due_ms) const {
  return encode_index_key({due_ms, id_.ns(), std::string(id_.body()), std::string(name)});
}

Result<std::optional<AlarmRecord>> ObjectStorage::read_alarm(std::string_view name) {
  auto raw = reading().get(alarm_key(name));
  if (!raw) return std::move(raw).error();
  if (!*raw) return std::optional<AlarmRecord>{};
  auto record = decode_record(**raw);
  if (!record) {
    return Error{ErrorCode::corruption, "alarm record '" + std::string(name) + "' is malformed"};
  }
  return std::optional<AlarmRecord>{std::move(*record)};
}

void ObjectStorage::remove_alarm(std::string_view name, const AlarmRecord& record) {
  std::string index_key = alarm_index_key(name, record.due_ms);
  auto& batch = writing();
  batch.del(alarm_key(name));
  batch.del(keys::index_entry(keys::kAlarmIndex, index_key));
  turn().alarm_changes.push_back({std::move(index_key), std::nullopt});
}

Result<void> ObjectStorage::set_alarm(std::string_view name, std::int64_t due_ms) {
  if (auto ok = check_write(name.size(), 64); !ok) return ok;
  auto existing = read_alarm(name);
  if (!existing) return fail_turn(std::move(existing).error());
  if (*existing) remove_alarm(name, **existing);
  AlarmRecord record{due_ms, std::to_string(epoch_.generation) + "." +
                                 std::to_string(epoch_.activation) + "." +
                                 std::to_string(next_alarm_sequence())};
  std::string index_key = alarm_index_key(name, due_ms);
  auto& batch = writing();
  batch.put(alarm_key(name), encode_record(record));
  batch.put(keys::index_entry(keys::kAlarmIndex, index_key), record.version);
  turn().alarm_changes.push_back({std::move(index_key), std::move(record.version)});
  return {};
}

Result<std::optional<std::int64_t>> ObjectStorage::get_alarm(std::string_view name) {
  auto record = read_alarm(name);
  if (!record) return std::move(record).error();
  if (!*record) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{(*record)->due_ms};
}

Result<bool> ObjectStorage::delete_alarm(std::string_view name) {
  if (auto ok = check_write(name.size(), 0); !ok) return std::move(ok).error();
  auto record = read_alarm(name);
  if (!record) return std::move(record).error();
  if (!*record) return false;
  remove_alarm(name, **record);
  return true;
}

// ---- runtime indexes ----

Result<void> ObjectStorage::index_put(std::string_view index, std::string_view key,
                                      std::string_view value) {
  if (auto ok = check_index(index); !ok) return ok;
  if (auto ok = check_write(key.size(), value.size()); !ok) return ok;
  writing().put(keys::index_entry(index, key), std::string(value));
  return {};
}

Result<void> ObjectStorage::index_del(std::string_view index, std::string_view key) {
  if (auto ok = check_index(index); !ok) return ok;
  if (auto ok = check_write(key.size(), 0); !ok) return ok;
  writing().del(keys::index_entry(index, key));
  return {};
}

// ---- the turn ----

Result<void> ObjectStorage::commit() {
  if (!turn_) return {};  // the turn used no storage
  const auto& writes = writing().writes();
  Result<void> committed;
  if (!writes.empty()) {
    committed = lease_token_ ? settings_.backend.commit_leased(writes, root(), lease_token_)
                             : settings_.backend.commit(writes);
    // Applied, the batch is what the store holds now. Failed, it may still have been
    // applied (a lost acknowledgement): what the store holds is unknown, so the cache
    // forgets all. (No cache yet: there is nothing to keep in step.)
    if (cache_ && committed) {
      cache_->apply(writes);
    } else if (cache_) {
      cache_->clear();
    }
  }
  end_turn();
  return committed;
}

void ObjectStorage::discard() { end_turn(); }

}  // namespace dorm::detail
