// Encoding of alarm records and alarm index entries (see alarms.hpp, keys.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/object_id.hpp"

namespace dorm::detail {

// The object's own record of one alarm.
struct AlarmRecord {
  std::int64_t due_ms = 0;
  std::string version;  // unique per set: "<generation>.<activation>.<sequence>"
};

std::string encode_record(const AlarmRecord& r);
std::optional<AlarmRecord> decode_record(std::string_view text);

// An entry of the "dorm.alarms" index: due time (big-endian, so index order is due
// order), then which object and which alarm. The value is the record's version.
struct AlarmIndexKey {
  std::int64_t due_ms = 0;
  std::string ns;
  std::string body;  // ObjectId::kBodyBytes
  std::string name;
};

// The key within the index (without the index prefix).
std::string encode_index_key(const AlarmIndexKey& k);
std::optional<AlarmIndexKey> decode_index_key(std::string_view key);
// The due time that begins an index key (or any key of at least its 8 bytes).
std::optional<std::int64_t> decode_due(std::string_view key);

// One change a turn made to the alarm index (key without the index prefix): an entry put
// with its version, or deleted (no version). The scheduler keeps its window by these.
struct AlarmIndexChange {
  std::string index_key;
  std::optional<std::string> version;

  friend bool operator==(const AlarmIndexChange&, const AlarmIndexChange&) = default;
};

}  // namespace dorm::detail
