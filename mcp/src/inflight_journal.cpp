#include "dorm/mcp/inflight_journal.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/mcp/session_keys.hpp"
#include "dorm/runtime/object_id.hpp"

namespace dorm::mcp {

std::string JournalRecord::to_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  std::string hex = stream_key(stream);
  w.StartObject();
  w.Key("stream");
  w.String(hex.data(), static_cast<rapidjson::SizeType>(hex.size()));
  w.Key("generation");
  w.Uint64(epoch.generation);
  w.Key("activation");
  w.Uint64(epoch.activation);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<JournalRecord> JournalRecord::from_json(const RequestId& request, std::string_view json) {
  auto bad = [&](std::string_view what) {
    return Error{ErrorCode::corruption, "journal record of request " + request.to_json() +
                                            " is malformed: " + std::string(what)};
  };
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  if (d.HasParseError() || !d.IsObject()) return bad("not a JSON object");
  if (!d.HasMember("stream") || !d["stream"].IsString()) return bad("\"stream\" is not a string");
  std::string_view hex(d["stream"].GetString(), d["stream"].GetStringLength());
  auto stream = hex.size() == 16 ? parse_fixed_hex(hex) : std::nullopt;
  if (!stream) return bad("\"stream\" is not 16 lowercase hex digits");
  if (!d.HasMember("generation") || !d["generation"].IsUint64()) {
    return bad("\"generation\" is not an unsigned integer");
  }
  if (!d.HasMember("activation") || !d["activation"].IsUint64()) {
    return bad("\"activation\" is not an unsigned integer");
  }
  JournalRecord r;
  r.request = request;
  r.stream = *stream;
  r.epoch = Epoch{d["generation"].GetUint64(), d["activation"].GetUint64()};
  return r;
}

Result<void> InflightJournal::put(const JournalRecord& record) {
  // Record and index entry in one batch: whoever scans the index finds the session
  // through the entry and the request through the record, or neither.
  if (auto ok = store_.put(session_keys::journal(record.request), record.to_json()); !ok) return ok;
  return index_.put(record.request.to_key());
}

Result<bool> InflightJournal::contains(const RequestId& request) {
  auto stored = store_.get(session_keys::journal(request));
  if (!stored) return std::move(stored).error();
  return stored->has_value();
}

Result<void> InflightJournal::del(const RequestId& request) {
  if (auto ok = store_.del(session_keys::journal(request)); !ok) return std::move(ok).error();
  return index_.del(request.to_key());
}

Result<InflightJournal::Listing> InflightJournal::list() {
  auto rows = store_.list(session_keys::kJournal);
  if (!rows) return std::move(rows).error();
  Listing out;
  for (auto& kv : *rows) {
    auto request_key = session_keys::journal_request_key(kv.key);
    auto request = request_key ? RequestId::from_key(*request_key) : std::nullopt;
    if (!request) {
      out.unreadable.emplace_back(
          kv.key, Error{ErrorCode::corruption, "journal key '" + kv.key + "' names no request id"});
      continue;
    }
    auto record = JournalRecord::from_json(*request, kv.value);
    if (!record) {
      out.unreadable.emplace_back(kv.key, std::move(record).error());
      continue;
    }
    out.records.push_back(std::move(*record));
  }
  return out;
}

std::string inflight_entry(std::string_view session_object_id, std::string_view request_key) {
  std::string out(session_object_id);
  out.push_back('/');
  out.append(request_key);
  return out;
}

std::optional<InflightEntry> parse_inflight_entry(std::string_view entry) {
  constexpr std::size_t kObjectIdText = ObjectId::kTextLength;
  if (entry.size() < kObjectIdText + 2 || entry[kObjectIdText] != '/') return std::nullopt;
  for (char c : entry.substr(0, kObjectIdText)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return InflightEntry{std::string(entry.substr(0, kObjectIdText)),
                       std::string(entry.substr(kObjectIdText + 1))};
}

}  // namespace dorm::mcp
