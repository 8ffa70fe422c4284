#include "dorm/mcp/session_snapshot.hpp"

#include <algorithm>

#include "dorm/mcp/session_keys.hpp"

namespace dorm::mcp {

Result<std::optional<std::string>> ReadOnlySessionStore::get(std::string_view key) {
  return backend_.get(prefix_ + std::string(key));
}

Result<void> ReadOnlySessionStore::put(std::string_view key, std::string_view) {
  return Error{ErrorCode::read_only,
               "a session read from outside cannot be written (put '" + std::string(key) + "')"};
}

Result<bool> ReadOnlySessionStore::del(std::string_view key) {
  return Error{ErrorCode::read_only,
               "a session read from outside cannot be written (del '" + std::string(key) + "')"};
}

Result<std::vector<storage::KeyValue>> ReadOnlySessionStore::list(std::string_view prefix,
                                                                  std::string_view start,
                                                                  std::size_t limit) {
  storage::ScanOptions scan = storage::ScanOptions::with_prefix(prefix_ + std::string(prefix));
  if (!start.empty()) scan.start = std::max(scan.start, prefix_ + std::string(start));
  scan.limit = limit;
  auto rows = backend_.scan(scan);
  if (!rows) return std::move(rows).error();
  for (auto& kv : *rows) kv.key.erase(0, prefix_.size());
  return rows;
}

Result<SessionSnapshot> read_session(SessionStore& store, const SnapshotOptions& options) {
  SessionSnapshot out;
  auto meta = store.get(session_keys::kMeta);
  if (!meta) return std::move(meta).error();
  if (*meta) {
    auto parsed = SessionMeta::from_json(**meta);
    if (parsed) {
      out.meta = std::move(*parsed);
    } else {
      out.problems.push_back(parsed.error().message);
    }
  }

  EventLog log(store);
  auto streams = log.streams();
  if (!streams && streams.error().code != ErrorCode::corruption) return std::move(streams).error();
  if (!streams) {
    out.problems.push_back(streams.error().message);
  } else {
    for (auto& record : *streams) {
      SessionSnapshot::Stream s{std::move(record), {}, 0};
      auto events = log.events(s.record.id);
      if (!events && events.error().code != ErrorCode::corruption) {
        return std::move(events).error();
      }
      if (!events) {
        out.problems.push_back(events.error().message);
      } else {
        s.events = std::move(*events);
        if (options.max_events != 0 && s.events.size() > options.max_events) {
          s.omitted = s.events.size() - options.max_events;
          s.events.erase(s.events.begin(),
                         s.events.begin() + static_cast<std::ptrdiff_t>(s.omitted));
        }
      }
      out.streams.push_back(std::move(s));
    }
  }

  auto journal = store.list(session_keys::kJournal);
  if (!journal) return std::move(journal).error();
  for (const auto& kv : *journal) {
    std::string request_key(session_keys::journal_request_key(kv.key).value_or(""));
    auto request = RequestId::from_key(request_key);
    if (!request) {
      out.problems.push_back("journal record " + request_key + ": the key names no request id");
      continue;
    }
    auto record = JournalRecord::from_json(*request, kv.value);
    if (!record) {
      out.problems.push_back("journal record " + request_key + ": " + record.error().message);
      continue;
    }
    out.journal.push_back({std::move(request_key), *record});
  }
  return out;
}

}  // namespace dorm::mcp
