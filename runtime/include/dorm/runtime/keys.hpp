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

#include <string>
#include <string_view>

namespace dorm::keys {

inline constexpr char kMeta = '\x01';
inline constexpr char kObject = '\x02';
inline constexpr char kIndex = '\x03';

std::string meta(std::string_view name);
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

}  // namespace dorm::keys
