// InflightJournal — the requests of a session that were dispatched and not yet answered.
//
// Before a request is dispatched, the session records it: which stream its answer goes to
// and the epoch of the activation that runs it. In the same batch it adds an entry to the
// runtime index `mcp.inflight`, so the sessions with work in flight can be found without
// activating any. Record and entry are removed in the batch that stores the request's
// final response (or, for a cancelled request, in the batch that ends its stream). So a
// record exists exactly while nobody has been told the request's outcome; one whose epoch
// is older than the current activation's belongs to work that died with its activation,
// and the Reaper (reaper.hpp) answers it.
//
// Plain code over the session's storage (SessionStore) and an InflightIndex, so it runs
// inside the session's turn, in that turn's batch, and is tested without actors.
//
// Keys, inside the session's own key space:
//   j/<RequestId::to_key()>   {"stream":"<16 hex>","generation":G,"activation":A}
// Index `mcp.inflight`, key:  <session object id>/<RequestId::to_key()>  (the session
// object builds it; this file only passes the request key).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/event_log.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/epoch.hpp"

namespace dorm::mcp {

// The runtime index that lists every session's in-flight requests.
inline constexpr std::string_view kInflightIndex = "mcp.inflight";

// One in-flight request: where its answer goes and who was running it.
struct JournalRecord {
  RequestId request{std::int64_t{0}};
  std::uint64_t stream = 0;  // the EventLog stream that carries the answer
  Epoch epoch;               // the activation that dispatched it

  // {"stream":"<16 hex>","generation":G,"activation":A} (the request is the key).
  std::string to_json() const;
  // Reads what to_json() wrote, for the request `request`. Errors: corruption, naming
  // the request and what is wrong, for anything else (not JSON, a member missing or of
  // the wrong type, a stream that is not 16 lowercase hex digits).
  static Result<JournalRecord> from_json(const RequestId& request, std::string_view json);
};

// The runtime-index half of the journal. The session object implements it with its
// turn's index_put/index_del, so an entry is written in the same batch as its record.
class InflightIndex {
 public:
  virtual ~InflightIndex() = default;
  // Adds / removes the entry of request `request_key` (RequestId::to_key()) of this session.
  virtual Result<void> put(std::string_view request_key) = 0;
  virtual Result<void> del(std::string_view request_key) = 0;
};

class InflightJournal {
 public:
  InflightJournal(SessionStore& store, InflightIndex& index) : store_(store), index_(index) {}

  // Records `record` and adds its index entry (one batch: the caller's turn). There is one
  // record per request id, so the caller must not put a request whose id is in flight
  // (contains()): the second put would replace the first record, and whichever finished
  // first would delete the other's, leaving it unreaped after a crash.
  Result<void> put(const JournalRecord& record);
  // Whether `request` has a record: it is in flight (or was left by a dead activation and
  // not reaped yet). Errors: the store's.
  Result<bool> contains(const RequestId& request);
  // Removes the record of `request` and its index entry; removing one that is not there
  // is not an error (the index entry is removed either way).
  Result<void> del(const RequestId& request);

  // What list() found: the records it could read, in key order, and the keys of those it
  // could not, each with the reason (corruption).
  struct Listing {
    std::vector<JournalRecord> records;
    std::vector<std::pair<std::string, Error>> unreadable;
  };
  // Every record of this session. A malformed key or record does not fail the listing:
  // it is reported in `unreadable` (and left in place). Errors: the store's.
  Result<Listing> list();

 private:
  SessionStore& store_;
  InflightIndex& index_;
};

// The "mcp.inflight" entry of a session's request: <session object id>/<request key>.
std::string inflight_entry(std::string_view session_object_id, std::string_view request_key);

struct InflightEntry {
  std::string session_object_id;
  std::string request_key;
};
// The parts of an entry as inflight_entry writes it; none for anything else (an object
// id is 64 lower-case hex digits, and the request key is not empty).
std::optional<InflightEntry> parse_inflight_entry(std::string_view entry);

}  // namespace dorm::mcp
