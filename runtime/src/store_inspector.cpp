#include "dorm/runtime/store_inspector.hpp"

#include <charconv>

#include "alarm_records.hpp"
#include "dorm/hex.hpp"
#include "dorm/runtime/keys.hpp"

namespace dorm {
namespace {

// Entries read per scan where a call reads every entry of a range.
constexpr std::size_t kPage = 1024;

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The first key at or after `start` and before `end`, if any.
Result<std::optional<std::string>> first_key(storage::Backend& backend, std::string start,
                                             std::optional<std::string> end) {
  storage::ScanOptions scan;
  scan.start = std::move(start);
  scan.end = std::move(end);
  scan.limit = 1;
  auto rows = backend.scan(scan);
  if (!rows) return std::move(rows).error();
  if (rows->empty()) return std::optional<std::string>{};
  return std::optional<std::string>{std::move(rows->front().key)};
}

// Walks the distinct things stored under one key kind (namespaces, indexes) without reading
// all their keys: `visit` gets the first key at or after the cursor and returns where the
// next seek starts (none: the key space ends there).
template <class Visit>
Result<void> skip_scan(storage::Backend& backend, char kind, Visit&& visit) {
  std::string start(1, kind);
  const std::string end(1, static_cast<char>(kind + 1));
  for (;;) {
    auto key = first_key(backend, start, end);
    if (!key) return std::move(key).error();
    if (!*key) return {};
    Result<std::optional<std::string>> next = visit(**key);
    if (!next) return std::move(next).error();
    if (!*next) return {};
    start = std::move(**next);
  }
}

// Calls `each` for every entry with `prefix`, a page at a time.
template <class F>
Result<void> for_each_entry(storage::Backend& backend, const std::string& prefix, F&& each) {
  storage::ScanOptions scan = storage::ScanOptions::with_prefix(prefix);
  scan.limit = kPage;
  for (;;) {
    auto rows = backend.scan(scan);
    if (!rows) return std::move(rows).error();
    for (const auto& kv : *rows) each(kv);
    if (rows->size() < kPage) return {};
    scan.start_after = rows->back().key;
  }
}

// The start of the object range of namespace `ns`: kObject <ns> 0x00.
std::string namespace_prefix(std::string_view ns) {
  std::string out(1, keys::kObject);
  out.append(ns).push_back('\0');
  return out;
}

}  // namespace

Result<StoreInspector> StoreInspector::open(storage::Backend& backend) {
  auto secret = backend.get(keys::meta(keys::kMetaIdSecret));
  if (!secret) return std::move(secret).error();
  std::optional<IdCodec> codec;
  if (*secret) {
    auto made = IdCodec::create(**secret);
    if (!made) {
      return Error{ErrorCode::corruption,
                   "the stored id secret is malformed: " + made.error().message};
    }
    codec.emplace(std::move(made).value());
  }
  return StoreInspector(backend, std::move(codec));
}

StoredObject StoreInspector::object(std::string_view ns, std::string_view body) const {
  StoredObject out{std::string(ns), std::string(body), {}};
  out.id = codec_ ? codec_->from_body(ns, body).to_string() : hex_encode(body);
  return out;
}

std::string StoreInspector::data_prefix(const StoredObject& object) {
  return keys::object_prefix(object.ns, object.body) + keys::kObjectData;
}

Result<StoredRuntimeState> StoreInspector::runtime_state() {
  std::vector<std::string> names{
      keys::meta(keys::kMetaGeneration), keys::meta(keys::kMetaCleanShutdown),
      keys::meta(keys::kMetaVersionLabel), keys::meta(keys::kMetaIdSecret)};
  auto values = backend_->get_many(names);
  if (!values) return std::move(values).error();
  StoredRuntimeState out;
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& v = (*values)[i];
    if (!v) continue;
    auto n = parse_u64(*v);
    if (!n) {
      return Error{ErrorCode::corruption, "stored " + std::string(*keys::decode_meta(names[i])) +
                                              " '" + *v + "' is not a number"};
    }
    (i == 0 ? out.generation : out.clean_shutdown) = *n;
  }
  out.version_label = (*values)[2];
  out.has_id_secret = (*values)[3].has_value();
  return out;
}

Result<std::vector<NamespaceCount>> StoreInspector::namespaces() {
  std::vector<NamespaceCount> out;
  auto walked = skip_scan(*backend_, keys::kObject, [&](const std::string& key) -> Result<std::optional<std::string>> {
    auto decoded = keys::decode_object_key(key);
    if (!decoded) return std::optional<std::string>{key + '\0'};  // not the runtime's: step over it alone
    if (out.empty() || out.back().ns != decoded->ns) out.push_back({std::string(decoded->ns), 0});
    ++out.back().objects;
    // The next object: past every key of this one.
    return storage::ScanOptions::prefix_successor(keys::object_prefix(decoded->ns, decoded->body));
  });
  if (!walked) return std::move(walked).error();
  return out;
}

Result<std::vector<StoredObject>> StoreInspector::objects(std::string_view ns, std::size_t limit,
                                                          std::string_view after_body) {
  std::vector<StoredObject> out;
  const std::string prefix = namespace_prefix(ns);
  const auto end = storage::ScanOptions::prefix_successor(prefix);
  std::string start = prefix;
  if (!after_body.empty()) {
    auto past = storage::ScanOptions::prefix_successor(keys::object_prefix(ns, after_body));
    if (!past) return out;
    start = std::move(*past);
  }
  while (limit == 0 || out.size() < limit) {
    auto key = first_key(*backend_, start, end);
    if (!key) return std::move(key).error();
    if (!*key) break;
    auto decoded = keys::decode_object_key(**key);
    if (!decoded || decoded->ns != ns) {
      start = **key + '\0';
      continue;
    }
    out.push_back(object(ns, decoded->body));
    auto next = storage::ScanOptions::prefix_successor(keys::object_prefix(ns, decoded->body));
    if (!next) break;
    start = std::move(*next);
  }
  return out;
}

namespace {

Error stopped_counting() {
  return Error{ErrorCode::unavailable, "the count was stopped before it finished"};
}

bool stop_requested(const std::atomic<bool>* stop) {
  return stop && stop->load(std::memory_order_relaxed);
}

}  // namespace

Result<std::size_t> StoreInspector::count_objects(std::string_view ns,
                                                  const std::atomic<bool>* stop) {
  const std::string prefix = namespace_prefix(ns);
  const auto end = storage::ScanOptions::prefix_successor(prefix);
  std::string start = prefix;
  std::size_t count = 0;
  for (;;) {
    if (stop_requested(stop)) return stopped_counting();
    auto key = first_key(*backend_, start, end);
    if (!key) return std::move(key).error();
    if (!*key) return count;
    auto decoded = keys::decode_object_key(**key);
    if (!decoded || decoded->ns != ns) {
      start = **key + '\0';  // not the runtime's: step over it alone
      continue;
    }
    ++count;
    auto next = storage::ScanOptions::prefix_successor(keys::object_prefix(ns, decoded->body));
    if (!next) return count;
    start = std::move(*next);
  }
}

Result<std::size_t> StoreInspector::count_index_entries(std::string_view index,
                                                        const std::atomic<bool>* stop) {
  storage::ScanOptions scan = storage::ScanOptions::with_prefix(keys::index_prefix(index));
  scan.limit = kPage;
  std::size_t count = 0;
  for (;;) {
    if (stop_requested(stop)) return stopped_counting();
    auto rows = backend_->scan(scan);
    if (!rows) return std::move(rows).error();
    count += rows->size();
    if (rows->size() < kPage) return count;
    scan.start_after = std::move(rows->back().key);
  }
}

Result<std::optional<StoredObject>> StoreInspector::find_object(std::string_view ns,
                                                                std::string_view text) {
  std::optional<std::string> body;
  if (text.size() == ObjectId::kTextLength) {
    if (codec_) {
      if (auto id = codec_->parse(ns, text)) body = std::string(id->body());
    } else {
      body = hex_decode(text.substr(0, 2 * ObjectId::kBodyBytes));
    }
  } else if (!codec_ && text.size() == 2 * ObjectId::kBodyBytes) {
    body = hex_decode(text);
  }
  if (!body && codec_) body = std::string(codec_->from_name(ns, text).body());
  if (!body) {
    // Appended, not `"'" + std::string(...)`: GCC 12 at -O3 misreads that as an oversized
    // memcpy (-Wstringop-overflow, GCC bug 105329).
    std::string message = "'";
    message.append(text).append("' is not an object id of namespace '").append(ns).append(
        "' (this store holds no id secret, so objects can be named only by the hex digits of "
        "their id)");
    return Error{ErrorCode::invalid_argument, std::move(message)};
  }
  auto key = first_key(*backend_, keys::object_prefix(ns, *body),
                       storage::ScanOptions::prefix_successor(keys::object_prefix(ns, *body)));
  if (!key) return std::move(key).error();
  if (!*key) return std::optional<StoredObject>{};
  return std::optional<StoredObject>{object(ns, *body)};
}

Result<ObjectUsage> StoreInspector::usage(const StoredObject& object) {
  ObjectUsage out;
  auto ok = for_each_entry(*backend_, keys::object_prefix(object.ns, object.body),
                           [&](const storage::KeyValue& kv) {
                             auto decoded = keys::decode_object_key(kv.key);
                             if (!decoded) return;
                             if (decoded->kind == keys::kObjectAlarm) {
                               ++out.alarms;
                             } else {
                               ++out.data_keys;
                               out.data_bytes += decoded->rest.size() + kv.value.size();
                             }
                           });
  if (!ok) return std::move(ok).error();
  return out;
}

Result<std::vector<StoredAlarm>> StoreInspector::object_alarms(const StoredObject& object) {
  std::vector<StoredAlarm> out;
  std::string prefix = keys::object_prefix(object.ns, object.body) + keys::kObjectAlarm;
  bool malformed = false;
  auto ok = for_each_entry(*backend_, prefix, [&](const storage::KeyValue& kv) {
    auto record = detail::decode_record(kv.value);
    if (!record) {
      malformed = true;
      return;
    }
    out.push_back(StoredAlarm{object, kv.key.substr(prefix.size()), record->due_ms,
                              std::move(record->version)});
  });
  if (!ok) return std::move(ok).error();
  if (malformed) {
    return Error{ErrorCode::corruption,
                 "an alarm record of " + object.ns + "/" + object.id + " is malformed"};
  }
  return out;
}

Result<std::vector<StoredAlarm>> StoreInspector::alarms(std::size_t limit) {
  auto entries = index_entries(keys::kAlarmIndex, limit);
  if (!entries) return std::move(entries).error();
  std::vector<StoredAlarm> out;
  out.reserve(entries->size());
  for (auto& e : *entries) {
    auto k = detail::decode_index_key(e.key);
    if (!k) return Error{ErrorCode::corruption, "an entry of the alarm index is malformed"};
    out.push_back(
        StoredAlarm{object(k->ns, k->body), std::move(k->name), k->due_ms, std::move(e.value)});
  }
  return out;
}

Result<std::vector<IndexCount>> StoreInspector::indexes() {
  std::vector<IndexCount> out;
  auto walked = skip_scan(*backend_, keys::kIndex, [&](const std::string& key) -> Result<std::optional<std::string>> {
    auto decoded = keys::decode_index_key(key);
    if (!decoded) return std::optional<std::string>{key + '\0'};
    IndexCount count{std::string(decoded->index), 0};
    std::string prefix = keys::index_prefix(count.index);
    auto ok = for_each_entry(*backend_, prefix, [&](const storage::KeyValue&) { ++count.entries; });
    if (!ok) return std::move(ok).error();
    out.push_back(std::move(count));
    return storage::ScanOptions::prefix_successor(prefix);
  });
  if (!walked) return std::move(walked).error();
  return out;
}

Result<std::vector<StoredIndexEntry>> StoreInspector::index_entries(std::string_view index,
                                                                    std::size_t limit) {
  std::string prefix = keys::index_prefix(index);
  storage::ScanOptions scan = storage::ScanOptions::with_prefix(prefix);
  scan.limit = limit;
  auto rows = backend_->scan(scan);
  if (!rows) return std::move(rows).error();
  std::vector<StoredIndexEntry> out;
  out.reserve(rows->size());
  for (auto& kv : *rows) out.push_back({kv.key.substr(prefix.size()), std::move(kv.value)});
  return out;
}

}  // namespace dorm
