// StoreInspector — what a runtime keeps in a store, read without a runtime.
//
// `dorm inspect` points it at a backend opened read-only beside a running server (see
// storage::OpenMode). It decodes the key layout of keys.hpp: the runtime's metadata
// (generation, clean-shutdown marker, version label), the objects of each namespace, their
// alarm records and the "dorm.alarms" index, and the runtime indexes. It only reads
// (gets and scans), activates nothing and needs no CAF.
//
// Each call reads at its own moment. A RocksDB read-only open is one fixed snapshot, so
// calls agree; over SQLite beside a server, a later call may see later commits.
//
// Object ids are printed as the runtime prints them (64 hex digits: body, then MAC) when
// the store holds the id secret. A runtime given its secret from outside
// (RuntimeOptions::secret or secret_file) leaves none in the store; ids then print as their
// 32-hex-digit body alone, and ids_complete() is false. The secret itself is never shown.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/runtime/object_id.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm {

struct StoredRuntimeState {
  // The generation of the runtime that started last; none: no runtime ever started here.
  std::optional<std::uint64_t> generation;
  // The generation that last shut down cleanly, if its marker is there: the marker is
  // cleared when a runtime starts, so it is absent while one runs and after a crash.
  std::optional<std::uint64_t> clean_shutdown;
  std::optional<std::string> version_label;
  bool has_id_secret = false;
};

struct NamespaceCount {
  std::string ns;
  std::size_t objects = 0;
};

struct IndexCount {
  std::string index;
  std::size_t entries = 0;
};

// One object that has at least one key in the store.
struct StoredObject {
  std::string ns;
  std::string body;  // raw, ObjectId::kBodyBytes
  std::string id;    // as printed (see above)
};

struct ObjectUsage {
  std::size_t data_keys = 0;
  std::size_t data_bytes = 0;  // keys and values of the object's own storage
  std::size_t alarms = 0;
};

struct StoredAlarm {
  StoredObject object;
  std::string name;  // "" for the default alarm
  std::int64_t due_ms = 0;
  std::string version;
};

struct StoredIndexEntry {
  std::string key;  // within the index
  std::string value;
};

class StoreInspector {
 public:
  // Reads the id secret, if the store holds one. The backend must outlive the inspector.
  // Errors: the backend's; corruption for a stored secret of the wrong size.
  static Result<StoreInspector> open(storage::Backend& backend);

  // Whether ids print in full (the store holds the id secret).
  bool ids_complete() const { return codec_.has_value(); }

  // Errors: the backend's; corruption for a generation that is not a number.
  Result<StoredRuntimeState> runtime_state();

  // Every namespace with at least one object, in name order, with its object count. One
  // seek per object: an object's own keys are skipped, not read.
  Result<std::vector<NamespaceCount>> namespaces();

  // How many objects of `ns` have at least one key in the store: one seek per object, as
  // namespaces(), none of their keys read. `stop`, if given, is looked at before each
  // seek: once it is true the count ends with `unavailable` (a server stopping while it
  // counts a large store in the background).
  Result<std::size_t> count_objects(std::string_view ns, const std::atomic<bool>* stop = nullptr);

  // How many entries index `index` holds, read a page at a time (`stop` as above).
  Result<std::size_t> count_index_entries(std::string_view index,
                                          const std::atomic<bool>* stop = nullptr);

  // Objects of `ns` in key order, after the one with raw body `after_body` (empty: from
  // the first), at most `limit` of them (0: all).
  Result<std::vector<StoredObject>> objects(std::string_view ns, std::size_t limit,
                                            std::string_view after_body = {});

  // The object of `ns` that `text` names: a printed id (its MAC checked when the store
  // has the secret; without it, the body is taken as is), or, when the store has the
  // secret, a name as given to id_from_name (an MCP session id, say). None when that
  // object has no keys. Errors: invalid_argument when `text` is neither.
  Result<std::optional<StoredObject>> find_object(std::string_view ns, std::string_view text);

  Result<ObjectUsage> usage(const StoredObject& object);

  // The object's alarms, from its own records, by name.
  Result<std::vector<StoredAlarm>> object_alarms(const StoredObject& object);

  // Every object's alarms, earliest first (the "dorm.alarms" index), at most `limit`
  // (0: all).
  Result<std::vector<StoredAlarm>> alarms(std::size_t limit);

  // Every runtime index with at least one entry, in name order, with its entry count
  // (every entry is read, a page at a time).
  Result<std::vector<IndexCount>> indexes();

  // Entries of `index` in key order, at most `limit` (0: all).
  Result<std::vector<StoredIndexEntry>> index_entries(std::string_view index, std::size_t limit);

  // The key prefix of the object's own storage: what DurableObject::get and list see
  // under their keys.
  static std::string data_prefix(const StoredObject& object);

 private:
  StoreInspector(storage::Backend& backend, std::optional<IdCodec> codec)
      : backend_(&backend), codec_(std::move(codec)) {}
  StoredObject object(std::string_view ns, std::string_view body) const;

  storage::Backend* backend_;
  std::optional<IdCodec> codec_;
};

}  // namespace dorm
