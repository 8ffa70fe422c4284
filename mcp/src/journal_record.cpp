#include "dorm/mcp/journal_record.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "dorm/mcp/event_id.hpp"
#include "dorm/runtime/object_id.hpp"

namespace dorm::mcp {
namespace {

constexpr std::size_t kObjectIdText = ObjectId::kTextLength;

}  // namespace

std::string JournalRecord::to_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  std::string key = stream_key(stream);
  w.StartObject();
  w.Key("stream");
  w.String(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.Key("generation");
  w.Uint64(generation);
  w.Key("activation");
  w.Uint64(activation);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<JournalRecord> JournalRecord::from_json(std::string_view json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  Error bad{ErrorCode::corruption, "journal record is malformed: '" + std::string(json) + "'"};
  if (d.HasParseError() || !d.IsObject()) return bad;
  if (!d.HasMember("stream") || !d["stream"].IsString() || !d.HasMember("generation") ||
      !d["generation"].IsUint64() || !d.HasMember("activation") || !d["activation"].IsUint64()) {
    return bad;
  }
  std::string_view stream(d["stream"].GetString(), d["stream"].GetStringLength());
  auto id = stream.size() == 16 ? parse_fixed_hex(stream) : std::nullopt;
  if (!id) return bad;
  return JournalRecord{*id, d["generation"].GetUint64(), d["activation"].GetUint64()};
}

std::string inflight_entry(std::string_view session_object_id, std::string_view request_key) {
  std::string out(session_object_id);
  out.push_back('/');
  out.append(request_key);
  return out;
}

std::optional<InflightEntry> parse_inflight_entry(std::string_view entry) {
  if (entry.size() < kObjectIdText + 2 || entry[kObjectIdText] != '/') return std::nullopt;
  for (char c : entry.substr(0, kObjectIdText)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return InflightEntry{std::string(entry.substr(0, kObjectIdText)),
                       std::string(entry.substr(kObjectIdText + 1))};
}

}  // namespace dorm::mcp
