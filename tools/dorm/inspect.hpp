// `dorm inspect`: a read-only look at a store, safe while `dorm serve` runs on it.
//
// The store is opened with storage::OpenMode::read_only: nothing is written, the owner's
// lock is neither taken nor waited for, and a store that does not exist is an error, not
// a new empty store. What it shows: the runtime's generation and clean-shutdown marker,
// namespaces with their object counts, the runtime indexes (every alarm from
// "dorm.alarms", in due order; entries of the others, "mcp.inflight" decoded), and, for
// MCP sessions, each one's metadata, alarms, in-flight journal records and streams with
// their events decoded. Everything is collected into a StoreReport first and then printed
// as text for people or as one JSON document (--json) for scripts. A backup directory made
// by `dorm backup` may be given in place of a URI: its copy is inspected, and its manifest
// shown.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dorm/mcp/session_snapshot.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/store_inspector.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/backup.hpp"

namespace dorm::tools {

struct InspectOptions {
  // A storage URI (storage_uri.hpp; memory: has nothing to inspect), or a backup directory.
  std::string storage;
  bool json = false;
  // Which sessions are shown in detail: empty for the first `limit` (in id order), "all"
  // for every one, or one session named by its object id or by its MCP session id.
  std::string session;
  std::size_t limit = 20;   // sessions, alarms and entries per index listed; 0: no limit
  std::size_t events = 50;  // the newest events shown per stream; 0: all
};

struct SessionReport {
  StoredObject object;
  ObjectUsage usage;
  std::vector<StoredAlarm> alarms;
  mcp::SessionSnapshot snapshot;
};

struct IndexReport {
  IndexCount count;
  std::vector<StoredIndexEntry> entries;  // the first `limit`
};

struct StoreReport {
  std::string storage;  // the backend's description
  std::optional<storage::BackupManifest> backup;  // when a backup directory was inspected
  bool ids_complete = true;
  StoredRuntimeState runtime;
  std::vector<NamespaceCount> namespaces;
  std::size_t alarms_total = 0;
  std::vector<StoredAlarm> alarms;   // the first `limit`, earliest first
  std::vector<IndexReport> indexes;  // every index; entries of all but "dorm.alarms"
  std::size_t sessions_total = 0;    // objects in the mcp-session namespace
  std::vector<SessionReport> sessions;
  InspectOptions options;
};

// Reads everything the report shows from `backend`, only reading.
// Errors: the backend's; not_found when options.session names no stored session;
// invalid_argument when it cannot name one (see StoreInspector::find_object).
Result<StoreReport> collect_report(storage::Backend& backend, const InspectOptions& options);

// The report for people: aligned sections, times in UTC, long events shortened.
std::string format_text(const StoreReport& report);
// The report as one JSON document (RapidJSON), events' JSON-RPC messages as JSON values.
std::string format_json(const StoreReport& report);

// The subcommand: opens options.storage (or the copy in a backup directory) read-only, prints the report to stdout and
// returns the exit status (0; 1 with the reason logged when the store cannot be opened
// or read, or the session is not there).
int inspect(const InspectOptions& options);

}  // namespace dorm::tools
