// Reaper — answers the requests that a dead activation left unanswered.
//
// A journal record (inflight_journal.hpp) older than the current activation's epoch marks
// a request whose work died with its activation: the process stopped (an older
// generation: `server_restart`) or this session's activation of the current generation
// was reset (an older activation: `session_reset`). Its client may be waiting, or will
// resume its stream with Last-Event-ID; without the reaper it would find nothing and
// hang until its own timeout. So at every start, before any traffic, each such record
// gets, in one batch of its own:
//   - the JSON-RPC error response for its request id appended to its stream's log
//     (interrupted_error(): code -32001, `data.reason`, `retrySafe: false`,
//     `deadGeneration`), so a resume replays it;
//   - its stream marked finished once no other dead record of that stream remains, so a
//     resume after the error gets 204 once nothing follows (the session arms the stream's
//     retention in the same batch);
//   - the record and its index entry deleted;
// and then the caller's commit. A crash (or a failed commit) therefore leaves every
// record either fully reaped or untouched, and the next start reaps the rest exactly once.
// The record goes only in the batch that makes its error durable, never before.
//
// Never touched: records of the current epoch or a newer one (they are running), and
// records that point at a standalone stream (request "": it answers no request).
// Dropped without an error: a record whose stream already holds a response for its
// request (the answer is there to resume), and one whose stream is gone (expired or
// deleted) or already finished (nothing more can be sent on it).
//
// The error never invites a retry: the work may have had side effects (a charge, a mail)
// before it died, so the message says the outcome is unknown and to check state first,
// and `retrySafe` is false. -32001 is also the official SDK client's own request-timeout
// code; clients tell a reaped request from their own timeout by `data.reason`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dorm/mcp/event_log.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/epoch.hpp"

namespace dorm::mcp {

// Why a request's work died.
enum class ReapReason {
  server_restart,  // the record's generation is older: the process (or runtime) stopped
  session_reset,   // same generation, older activation: the session object was reset
  // Not found by the reaper: a draining server (a planned deploy) stopped the request
  // itself when its drain window ran out, and answered it with this same error.
  server_draining,
};

// "server_restart" / "session_reset" / "server_draining": the error's `data.reason`.
std::string_view to_string(ReapReason reason);

// The reason for a record of epoch `dead` found by an activation of epoch `current`.
// Precondition: dead < current.
ReapReason reap_reason(const Epoch& dead, const Epoch& current);

// The error response the reaper appends for `request` (and a draining server writes):
// {"jsonrpc":"2.0","id":ID,"error":{"code":-32001,"message":…,
//  "data":{"reason":"server_restart"|"session_reset"|"server_draining","retrySafe":false,
//          "deadGeneration":N}}}
std::string interrupted_error(const RequestId& request, ReapReason reason,
                              std::uint64_t dead_generation);

// What one reap did.
struct ReapReport {
  std::size_t requests = 0;        // errors appended (one per reaped request)
  std::size_t streams = 0;         // distinct streams they were appended to
  std::size_t server_restart = 0;  // of `requests`, by reason
  std::size_t session_reset = 0;
  std::size_t answered = 0;     // records dropped: their stream held the response
  std::size_t stream_gone = 0;  // records dropped: stream expired, deleted or ended
  std::size_t standalone = 0;   // records left alone: they name a standalone stream
  // Generations of the records reaped or dropped, ascending, each once.
  std::vector<std::uint64_t> dead_generations;
  // The reap stopped here (a storage error or a failed commit): records not yet handled
  // are untouched, for the next start.
  std::optional<Error> failure;

  // "server_restart", "session_reset", "server_restart,session_reset" when both occur
  // (records left across several starts with the reaper switched off), "" when none.
  std::string reason() const;
  // The newest of dead_generations (0 when empty).
  std::uint64_t dead_generation() const;
  // Records that were reaped or dropped.
  std::size_t handled() const { return requests + answered + stream_gone; }
};

// "reaped 2 in-flight request(s) on 1 stream(s) left by generation 5 (server_restart)":
// the message of the restart_reap span's exception event (reap_telemetry.hpp).
std::string describe(const ReapReport& report);

class Reaper {
 public:
  Reaper(InflightJournal& journal, EventLog& log) : journal_(journal), log_(log) {}

  // Dead work found, not yet touched: the records older than the current epoch, grouped
  // by stream (streams in id order, each stream's requests in RequestId order, which for
  // a batch of integer ids is the order a client numbers them in).
  struct Plan {
    std::vector<JournalRecord> dead;
    // Dead records that name a standalone stream: left alone, only counted.
    std::size_t standalone = 0;
    // Records that could not be read, or whose stream record could not be (journal key,
    // reason): left in place, never guessed at.
    std::vector<std::pair<std::string, Error>> unreadable;
    bool empty() const { return dead.empty(); }
  };
  // Lists the journal and looks up the dead records' streams. Reads only. Errors: the
  // store's.
  Result<Plan> find(const Epoch& current);

  // One record's batch is written: the caller commits it (and, when `finished_stream`,
  // arms the stream's retention in that same batch first). A failure stops the reap.
  struct Step {
    const JournalRecord& record;
    bool appended;         // its error went to the stream
    bool finished_stream;  // this batch marks the stream finished
  };
  using Commit = std::function<Result<void>(const Step&)>;

  // Reaps `plan` (from find() with the same `current`) one record per batch, finishing
  // streams at `now_ms`. Never throws; a failure is in the report.
  ReapReport run(const Plan& plan, const Epoch& current, std::int64_t now_ms, const Commit& commit);

 private:
  // Whether `events` hold a response (result or error) for `request`.
  static bool answered(const std::vector<StoredEvent>& events, const RequestId& request);

  InflightJournal& journal_;
  EventLog& log_;
};

}  // namespace dorm::mcp
