// EventLog — the durable log of a session's SSE streams, so a client can resume one.
//
// Every event is stored before it is sent; a resume (`Last-Event-ID`) replays what a
// stream holds after the cursor. Per stream at most `max_events` events and `max_bytes`
// of data are kept, the oldest dropped first and the newest never; an event larger than
// the store's value limit is kept in chunks; a finished stream is kept `retention_ms`
// after it finished (longer than any client waits for a response), then expire() removes
// it. The priming event (seq 0, empty data, with the stream's retry hint) is stored like
// any other, so ids stay dense, and skipped by replays.
//
// Plain code over the session's storage (SessionStore), so it runs inside the session's
// turn, in the same batch as whatever else the turn writes, and is tested without actors.
//
// Keys, inside the session's own key space:
//   l/<stream>                      the stream's record (JSON)
//   e/<stream>/<seq:16 hex>/<chunk:4 hex>   one chunk of one event's data
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/mcp/event_id.hpp"
#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::mcp {

// A session's own storage, as the protocol code needs it (the session object implements
// it over its DurableObject storage; every call belongs to the current turn).
class SessionStore {
 public:
  virtual ~SessionStore() = default;
  virtual Result<std::optional<std::string>> get(std::string_view key) = 0;
  virtual Result<void> put(std::string_view key, std::string_view value) = 0;
  virtual Result<bool> del(std::string_view key) = 0;
  // Keys starting with `prefix` and greater than or equal to `start` (empty: from the
  // first), in key order, at most `limit` (0 = all).
  virtual Result<std::vector<storage::KeyValue>> list(std::string_view prefix,
                                                      std::string_view start = {},
                                                      std::size_t limit = 0) = 0;
};

struct EventLogLimits {
  std::size_t max_events = 1000;
  std::size_t max_bytes = 4 * 1024 * 1024;
  // Chunk size: the store's value limit (DurableObject's default is 128 KiB).
  std::size_t chunk_bytes = 128 * 1024;
  // How long a finished stream stays resumable: longer than any client's request timeout.
  std::int64_t retention_ms = 15 * 60 * 1000;
};

struct StreamRecord {
  std::uint64_t id = 0;
  std::string request;       // the request it answers (RequestId::to_key); "" standalone
  std::int64_t retry_ms = 0; // the priming event's retry hint; 0: no priming event
  bool finished = false;
  std::int64_t finished_ms = 0;
  std::uint64_t first = 0;   // oldest seq still kept
  std::uint64_t next = 0;    // seq of the next event
  std::size_t bytes = 0;     // data bytes kept
  std::size_t events = 0;    // events kept
};

struct StoredEvent {
  EventId id;
  std::string data;  // a JSON-RPC message; empty for the priming event
};

class EventLog {
 public:
  EventLog(SessionStore& store, EventLogLimits limits = {}) : store_(store), limits_(limits) {}

  // Starts stream `id`, which must be new to this session: the caller's StreamIds
  // (stream_ids.hpp) guarantees that by construction, so nothing is read to check it. With
  // retry_ms > 0 its first event (seq 0) is a priming event.
  Result<StreamRecord> open(std::uint64_t id, std::string_view request, std::int64_t retry_ms);
  // Appends one event, dropping the oldest ones over the limits. Errors: not_found for
  // no such stream; invalid_argument for a finished one; limit_exceeded (naming the
  // size) for data over max_bytes, which is then not stored.
  Result<EventId> append(std::uint64_t stream, std::string_view data);
  // Marks the stream finished at `now_ms` (its retention starts). Idempotent.
  Result<void> finish(std::uint64_t stream, std::int64_t now_ms);

  Result<std::optional<StreamRecord>> stream(std::uint64_t id);
  Result<std::vector<StreamRecord>> streams();

  struct Replay {
    std::vector<StoredEvent> events;  // strictly after the cursor, priming left out
    bool truncated = false;  // the cursor is older than the oldest kept event
    bool finished = false;   // the stream ended: nothing more will come
  };
  // Events of the cursor's stream after the cursor. Errors: not_found when the cursor
  // names no stream of this session or a seq it never reached.
  Result<Replay> replay_after(const EventId& cursor);

  // Every event the stream keeps, oldest first, chunks joined, the priming event included
  // (with empty data): for tools that show a stream (dorm inspect). Errors: not_found for
  // no such stream.
  Result<std::vector<StoredEvent>> events(std::uint64_t stream);

  // Removes finished streams whose retention has passed; returns how many.
  Result<std::size_t> expire(std::int64_t now_ms);
  // When the next finished stream's retention passes, if any.
  Result<std::optional<std::int64_t>> next_expiry();

 private:
  Result<void> save(const StreamRecord& record);
  Result<std::size_t> remove_event(std::uint64_t stream, std::uint64_t seq);
  // The events of `stream` from seq `start` on, chunks joined.
  Result<std::vector<StoredEvent>> read_from(std::uint64_t stream, std::uint64_t start);
  SessionStore& store_;
  EventLogLimits limits_;
};

}  // namespace dorm::mcp
