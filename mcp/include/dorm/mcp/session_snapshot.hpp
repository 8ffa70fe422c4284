// SessionSnapshot — what one MCP session has stored, read from outside the session.
//
// For `dorm inspect`: read_session() reads a session's own storage through a SessionStore
// (ReadOnlySessionStore, over the session object's keys in a backend opened read-only)
// and decodes it: the metadata (SessionMeta under "meta"), every stream's record with the
// events it keeps (EventLog: chunks joined, the priming event included), and the in-flight
// journal's records (inflight_journal.hpp). It writes nothing. A record that does not decode
// is named in `problems` and the rest is still read, so one bad record hides nothing else.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "dorm/mcp/event_log.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/session_meta.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::mcp {

// The keys of a backend under one prefix, as a SessionStore that only reads: put and del
// fail with read_only and change nothing. The backend must outlive it.
class ReadOnlySessionStore final : public SessionStore {
 public:
  ReadOnlySessionStore(storage::Backend& backend, std::string prefix)
      : backend_(backend), prefix_(std::move(prefix)) {}

  Result<std::optional<std::string>> get(std::string_view key) override;
  Result<void> put(std::string_view key, std::string_view value) override;
  Result<bool> del(std::string_view key) override;
  Result<std::vector<storage::KeyValue>> list(std::string_view prefix, std::string_view start,
                                              std::size_t limit) override;

 private:
  storage::Backend& backend_;
  std::string prefix_;
};

struct SessionSnapshot {
  std::optional<SessionMeta> meta;  // none: no (decodable) metadata

  struct Stream {
    StreamRecord record;
    std::vector<StoredEvent> events;  // oldest first
    std::size_t omitted = 0;          // older kept events left out (SnapshotOptions)
  };
  std::vector<Stream> streams;  // by stream id

  struct Journal {
    std::string request_key;  // RequestId::to_key()
    JournalRecord record;
  };
  std::vector<Journal> journal;  // by request key

  std::vector<std::string> problems;  // records that did not decode
};

struct SnapshotOptions {
  // The newest this many events of each stream (0: all of them).
  std::size_t max_events = 0;
};

// Errors: the store's read errors. Records that do not decode go to `problems`.
Result<SessionSnapshot> read_session(SessionStore& store, const SnapshotOptions& options = {});

}  // namespace dorm::mcp
