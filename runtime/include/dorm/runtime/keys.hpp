// How the runtime lays out one backend's key space.
//
// Everything a runtime keeps lives in the one store it is given, so that one atomic commit
// can cover an object's state, its alarms and its runtime-index entries. The first byte
// says what a key is:
//
//   0x01 <name>                                       runtime metadata (secret, generation)
//   0x02 <namespace> 0x00 <id body:16> 'd' <user key>  one object's storage
//   0x02 <namespace> 0x00 <id body:16> 'a' <name>      one object's alarm records
//   0x03 <index name> 0x00 <entry key>                 runtime indexes
//
// Namespace and index names contain no 0x00 byte (they are checked when registered), so
// one object's prefix never contains another's. Index names beginning with "dorm." are
// the runtime's own (the alarm index is "dorm.alarms").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dorm::keys {

inline constexpr char kMeta = '\x01';
inline constexpr char kObject = '\x02';
inline constexpr char kIndex = '\x03';

std::string meta(std::string_view name);
// The runtime's metadata records (under kMeta).
inline constexpr std::string_view kMetaIdSecret = "id-secret";            // 32 raw bytes
inline constexpr std::string_view kMetaGeneration = "generation";         // decimal
inline constexpr std::string_view kMetaCleanShutdown = "clean-shutdown";  // decimal generation
inline constexpr std::string_view kMetaVersionLabel = "version-label";
std::string object_prefix(std::string_view ns, std::string_view id_body);
inline constexpr char kObjectData = 'd';
inline constexpr char kObjectAlarm = 'a';
inline constexpr std::string_view kAlarmIndex = "dorm.alarms";
std::string index_prefix(std::string_view index);
std::string index_entry(std::string_view index, std::string_view key);

// Namespace and index names: 1 to 64 characters from [a-z0-9._-].
bool valid_name(std::string_view name);
// Index names objects may write: valid, and not in the runtime's "dorm." space.
bool valid_user_index(std::string_view name);

// Decoding, for tools that read a store without a runtime (dorm inspect). The views
// point into the key passed in. Each returns none for a key of another kind or one the
// runtime never writes.

// The name of a runtime metadata key.
std::optional<std::string_view> decode_meta(std::string_view key);

// One key of one object: its namespace, id body (ObjectId::kBodyBytes), kind
// (kObjectData or kObjectAlarm) and what follows (the user key, or the alarm name).
struct ObjectKey {
  std::string_view ns;
  std::string_view body;
  char kind = 0;
  std::string_view rest;
};
std::optional<ObjectKey> decode_object_key(std::string_view key);

// One entry of a runtime index: the index name and the entry's key within it.
struct IndexKey {
  std::string_view index;
  std::string_view entry;
};
std::optional<IndexKey> decode_index_key(std::string_view key);

}  // namespace dorm::keys
