// The in-flight journal's records: which requests a session dispatched and has not answered.
//
// A session writes a record when a request starts running (tools/call) and deletes it in
// the batch that stores the request's final response, so a record that outlives its
// activation names a request whose outcome no client saw: the reaper answers it with an
// error (DESIGN §5). Each record goes with an entry of the runtime index "mcp.inflight",
// written and deleted in the same batch, so the sessions that hold records are found
// without activating any other.
//
// Keys:
//   j/<request key>                                   in the session's own storage
//   <session object id>/<request key>                 entry of the index "mcp.inflight"
// where the request key is RequestId::to_key() and the index entry's value is empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::mcp {

inline constexpr std::string_view kJournalPrefix = "j/";
inline constexpr std::string_view kInflightIndex = "mcp.inflight";

// A record's value: the stream the response goes to and the epoch of the activation that
// dispatched the request.
struct JournalRecord {
  std::uint64_t stream = 0;
  std::uint64_t generation = 0;
  std::uint64_t activation = 0;

  // {"stream":"<16 hex digits>","generation":N,"activation":N}
  std::string to_json() const;
  // Errors: corruption when `json` is not what to_json writes.
  static Result<JournalRecord> from_json(std::string_view json);

  friend bool operator==(const JournalRecord&, const JournalRecord&) = default;
};

// The "mcp.inflight" entry of a session's request.
std::string inflight_entry(std::string_view session_object_id, std::string_view request_key);

struct InflightEntry {
  std::string session_object_id;
  std::string request_key;
};
// The parts of an entry as inflight_entry writes it; none for anything else (an object
// id is 64 lower-case hex digits, and the request key is not empty).
std::optional<InflightEntry> parse_inflight_entry(std::string_view entry);

}  // namespace dorm::mcp
