#include "dorm/mcp/event_log.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

#include "dorm/mcp/session_keys.hpp"

namespace dorm::mcp {
namespace {

using session_keys::stream_record;

std::string encode(const StreamRecord& r) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("request");
  w.String(r.request.data(), static_cast<rapidjson::SizeType>(r.request.size()));
  w.Key("retryMs");
  w.Int64(r.retry_ms);
  w.Key("finished");
  w.Bool(r.finished);
  w.Key("finishedMs");
  w.Int64(r.finished_ms);
  w.Key("first");
  w.Uint64(r.first);
  w.Key("next");
  w.Uint64(r.next);
  w.Key("bytes");
  w.Uint64(r.bytes);
  w.Key("events");
  w.Uint64(r.events);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<StreamRecord> decode(std::uint64_t id, std::string_view json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  auto bad = Error{ErrorCode::corruption, "stream record " + stream_key(id) + " is malformed"};
  if (d.HasParseError() || !d.IsObject()) return bad;
  auto has = [&](const char* k) { return d.HasMember(k); };
  if (!has("request") || !d["request"].IsString() || !has("retryMs") || !d["retryMs"].IsInt64() ||
      !has("finished") || !d["finished"].IsBool() || !has("finishedMs") ||
      !d["finishedMs"].IsInt64() || !has("first") || !d["first"].IsUint64() || !has("next") ||
      !d["next"].IsUint64() || !has("bytes") || !d["bytes"].IsUint64() || !has("events") ||
      !d["events"].IsUint64()) {
    return bad;
  }
  StreamRecord r;
  r.id = id;
  r.request = d["request"].GetString();
  r.retry_ms = d["retryMs"].GetInt64();
  r.finished = d["finished"].GetBool();
  r.finished_ms = d["finishedMs"].GetInt64();
  r.first = d["first"].GetUint64();
  r.next = d["next"].GetUint64();
  r.bytes = static_cast<std::size_t>(d["bytes"].GetUint64());
  r.events = static_cast<std::size_t>(d["events"].GetUint64());
  return r;
}

}  // namespace

Result<void> EventLog::save(const StreamRecord& record) {
  return store_.put(stream_record(record.id), encode(record));
}

Result<std::optional<StreamRecord>> EventLog::stream(std::uint64_t id) {
  auto raw = store_.get(stream_record(id));
  if (!raw) return std::move(raw).error();
  if (!*raw) return std::optional<StreamRecord>{};
  auto record = decode(id, **raw);
  if (!record) return std::move(record).error();
  return std::optional<StreamRecord>{std::move(*record)};
}

Result<std::vector<StreamRecord>> EventLog::streams() {
  auto rows = store_.list(session_keys::kStreams);
  if (!rows) return std::move(rows).error();
  std::vector<StreamRecord> out;
  for (const auto& kv : *rows) {
    auto id = session_keys::parse_stream_record(kv.key);
    if (!id) return Error{ErrorCode::corruption, "stream key '" + kv.key + "' is malformed"};
    auto record = decode(*id, kv.value);
    if (!record) return std::move(record).error();
    out.push_back(std::move(*record));
  }
  return out;
}

Result<StreamRecord> EventLog::open(std::uint64_t id, std::string_view request,
                                    std::int64_t retry_ms) {
  StreamRecord r;
  r.id = id;
  r.request = std::string(request);
  r.retry_ms = retry_ms;
  if (retry_ms > 0) {
    // The priming event (seq 0) is counted like any event but not stored: it has no data,
    // and the record says it exists (retry_ms > 0, first == 0). One key fewer per call.
    r.next = 1;
    r.events = 1;
  }
  if (auto ok = save(r); !ok) return std::move(ok).error();
  return r;
}

Result<std::size_t> EventLog::remove_event(std::uint64_t stream, std::uint64_t seq) {
  auto chunks = store_.list(session_keys::event(stream, seq));
  if (!chunks) return std::move(chunks).error();
  std::size_t bytes = 0;
  for (const auto& kv : *chunks) {
    bytes += kv.value.size();
    if (auto ok = store_.del(kv.key); !ok) return std::move(ok).error();
  }
  return bytes;
}

Result<EventId> EventLog::append(std::uint64_t id, std::string_view data) {
  if (data.size() > limits_.max_bytes) {
    return Error{ErrorCode::limit_exceeded, "event of " + std::to_string(data.size()) +
                                                " bytes exceeds the stream limit of " +
                                                std::to_string(limits_.max_bytes) + " bytes"};
  }
  auto found = stream(id);
  if (!found) return std::move(found).error();
  if (!*found) return Error{ErrorCode::not_found, "no stream " + stream_key(id)};
  StreamRecord r = std::move(**found);
  if (r.finished) {
    return Error{ErrorCode::invalid_argument, "stream " + stream_key(id) + " has finished"};
  }
  std::uint64_t seq = r.next++;
  std::size_t chunk = std::max<std::size_t>(1, limits_.chunk_bytes);
  std::size_t n = 0;
  do {
    auto part = data.substr(std::min(data.size(), n * chunk), chunk);
    if (auto ok = store_.put(session_keys::event_chunk(id, seq, static_cast<std::uint32_t>(n)), part); !ok) return std::move(ok).error();
    ++n;
  } while (n * chunk < data.size());
  r.bytes += data.size();
  r.events += 1;
  // Oldest first, never the newest.
  while ((r.events > limits_.max_events || r.bytes > limits_.max_bytes) && r.first < seq) {
    auto freed = remove_event(id, r.first);
    if (!freed) return std::move(freed).error();
    r.bytes -= std::min(r.bytes, *freed);
    r.events -= 1;
    r.first += 1;
  }
  if (auto ok = save(r); !ok) return std::move(ok).error();
  return EventId{id, seq};
}

Result<void> EventLog::finish(std::uint64_t id, std::int64_t now_ms) {
  auto found = stream(id);
  if (!found) return std::move(found).error();
  if (!*found) return Error{ErrorCode::not_found, "no stream " + stream_key(id)};
  if ((*found)->finished) return {};
  (*found)->finished = true;
  (*found)->finished_ms = now_ms;
  return save(**found);
}

Result<EventLog::Replay> EventLog::replay_after(const EventId& cursor) {
  auto found = stream(cursor.stream);
  if (!found) return std::move(found).error();
  if (!*found || cursor.seq >= (*found)->next) {
    return Error{ErrorCode::not_found, "no event " + cursor.to_string() + " in this session"};
  }
  const StreamRecord& r = **found;
  Replay out;
  out.finished = r.finished;
  std::uint64_t start = std::max(cursor.seq + 1, r.first);
  out.truncated = cursor.seq + 1 < r.first;
  auto events = read_from(cursor.stream, start);
  if (!events) return std::move(events).error();
  out.events = std::move(*events);
  // The priming event has no data: nothing to replay.
  std::erase_if(out.events, [](const StoredEvent& e) { return e.data.empty(); });
  return out;
}

Result<std::vector<StoredEvent>> EventLog::events(std::uint64_t id) {
  auto found = stream(id);
  if (!found) return std::move(found).error();
  if (!*found) return Error{ErrorCode::not_found, "no stream " + stream_key(id)};
  const StreamRecord& r = **found;
  auto out = read_from(id, r.first);
  if (!out) return out;
  // The priming event, while it is still counted as kept. (Streams stored before it went
  // unstored have its empty chunk: then it was read.)
  if (r.retry_ms > 0 && r.first == 0 && (out->empty() || out->front().id.seq != 0)) {
    out->insert(out->begin(), StoredEvent{EventId{id, 0}, {}});
  }
  return out;
}

Result<std::vector<StoredEvent>> EventLog::read_from(std::uint64_t id, std::uint64_t start) {
  auto rows = store_.list(session_keys::stream_events(id), session_keys::event(id, start));
  if (!rows) return std::move(rows).error();
  std::vector<StoredEvent> out;
  for (const auto& kv : *rows) {
    auto seq = session_keys::parse_event_seq(id, kv.key);
    if (!seq) return Error{ErrorCode::corruption, "event key '" + kv.key + "' is malformed"};
    if (out.empty() || out.back().id.seq != *seq) out.push_back(StoredEvent{EventId{id, *seq}, {}});
    out.back().data += kv.value;
  }
  return out;
}

Result<std::size_t> EventLog::expire(std::int64_t now_ms) {
  auto all = streams();
  if (!all) return std::move(all).error();
  std::size_t removed = 0;
  for (const auto& r : *all) {
    if (!r.finished || r.finished_ms + limits_.retention_ms > now_ms) continue;
    auto rows = store_.list(session_keys::stream_events(r.id));
    if (!rows) return std::move(rows).error();
    for (const auto& kv : *rows) {
      if (auto ok = store_.del(kv.key); !ok) return std::move(ok).error();
    }
    if (auto ok = store_.del(stream_record(r.id)); !ok) return std::move(ok).error();
    ++removed;
  }
  return removed;
}

Result<std::optional<std::int64_t>> EventLog::next_expiry() {
  auto all = streams();
  if (!all) return std::move(all).error();
  std::optional<std::int64_t> next;
  for (const auto& r : *all) {
    if (!r.finished) continue;
    std::int64_t at = r.finished_ms + limits_.retention_ms;
    if (!next || at < *next) next = at;
  }
  return next;
}

}  // namespace dorm::mcp
