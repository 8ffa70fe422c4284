// The two forms of an inspect report: text for people, one JSON document for scripts.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <ctime>
#include <optional>

#include "dorm/hex.hpp"
#include "dorm/mcp/event_id.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/runtime/keys.hpp"
#include "inspect.hpp"

namespace dorm::tools {
namespace {

// Text events longer than this are shortened (the JSON form has them whole).
constexpr std::size_t kTextEventChars = 300;

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// Bytes from the store as one printable line: bytes outside printable ASCII, and the
// backslash, as \xNN. Keys and values of user indexes may hold any byte.
std::string printable(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out.push_back(c);
    } else {
      out += "\\x" + hex_encode(std::string_view(&c, 1));
    }
  }
  return out;
}

// Like printable(), but keeps valid UTF-8 (event data is JSON text, possibly non-ASCII):
// only control bytes and bytes that are not UTF-8 are escaped.
std::string terminal_safe(std::string_view text) {
  rapidjson::Document probe;
  probe.Parse<rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  if (probe.HasParseError()) return printable(text);
  std::string out;
  for (char c : text) {
    auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      out += printable(std::string_view(&c, 1));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Unix milliseconds as ISO-8601 UTC with milliseconds.
std::string utc(std::int64_t ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  int millis = static_cast<int>(((ms % 1000) + 1000) % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[48];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", millis);
  return buf;
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// A request key (RequestId::to_key) as the client wrote the id: 42 or "abc".
std::string request_text(std::string_view key) {
  if (key.empty()) return "(none: standalone stream)";
  auto id = mcp::RequestId::from_key(key);
  return id ? printable(id->to_json()) : printable(key);
}

std::string owner_text(const mcp::Identity& owner) {
  if (owner.user.empty() && owner.org.empty()) return "local user";
  return printable(owner.user) + (owner.org.empty() ? "" : " (" + printable(owner.org) + ")");
}

bool earlier_generation(const StoreReport& report, const mcp::JournalRecord& record) {
  return report.runtime.generation && record.epoch.generation < *report.runtime.generation;
}

// ---- JSON ----

void str(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void key(JsonWriter& w, const char* k) {
  w.Key(k);
}

// Bytes from the store as a JSON string: as they are when valid UTF-8, else printable().
void bytes(JsonWriter& w, std::string_view s) {
  rapidjson::StringBuffer probe_buffer;
  rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                    rapidjson::CrtAllocator, rapidjson::kWriteValidateEncodingFlag>
      probe(probe_buffer);
  if (probe.String(s.data(), static_cast<rapidjson::SizeType>(s.size()))) {
    str(w, s);
  } else {
    str(w, printable(s));
  }
}

// Stored JSON text as a JSON value; text that is not valid JSON as a string.
void json_value(JsonWriter& w, std::string_view text) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    bytes(w, text);
  } else {
    doc.Accept(w);
  }
}

void request_json(JsonWriter& w, std::string_view request_key) {
  auto id = mcp::RequestId::from_key(request_key);
  if (!id) {
    w.Null();
  } else if (id->is_integer()) {
    w.Int64(id->integer());
  } else {
    bytes(w, id->string());
  }
}

void alarm_json(JsonWriter& w, const StoredAlarm& a, bool with_object) {
  w.StartObject();
  if (with_object) {
    key(w, "namespace");
    str(w, a.object.ns);
    key(w, "object");
    str(w, a.object.id);
  }
  key(w, "name");
  bytes(w, a.name);
  key(w, "dueMs");
  w.Int64(a.due_ms);
  key(w, "due");
  str(w, utc(a.due_ms));
  key(w, "version");
  bytes(w, a.version);
  w.EndObject();
}

void index_json(JsonWriter& w, const IndexReport& index) {
  w.StartObject();
  key(w, "name");
  str(w, index.count.index);
  key(w, "entries");
  w.Uint64(index.count.entries);
  if (index.count.index != keys::kAlarmIndex) {
    key(w, "items");
    w.StartArray();
    for (const auto& e : index.entries) {
      w.StartObject();
      key(w, "key");
      bytes(w, e.key);
      key(w, "value");
      bytes(w, e.value);
      if (index.count.index == mcp::kInflightIndex) {
        if (auto parts = mcp::parse_inflight_entry(e.key)) {
          key(w, "session");
          str(w, parts->session_object_id);
          key(w, "requestKey");
          bytes(w, parts->request_key);
          key(w, "request");
          request_json(w, parts->request_key);
        }
      }
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

// One in-flight journal record of a session.
void journal_record_json(JsonWriter& w, const StoreReport& report,
                         const mcp::SessionSnapshot::Journal& j) {
  w.StartObject();
  key(w, "requestKey");
  bytes(w, j.request_key);
  key(w, "request");
  request_json(w, j.request_key);
  key(w, "stream");
  str(w, mcp::stream_key(j.record.stream));
  key(w, "generation");
  w.Uint64(j.record.epoch.generation);
  key(w, "activation");
  w.Uint64(j.record.epoch.activation);
  key(w, "earlierGeneration");
  w.Bool(earlier_generation(report, j.record));
  w.EndObject();
}

void stream_json(JsonWriter& w, const mcp::SessionSnapshot::Stream& stream) {
  const auto& r = stream.record;
  w.StartObject();
  key(w, "id");
  str(w, mcp::stream_key(r.id));
  key(w, "requestKey");
  bytes(w, r.request);
  key(w, "request");
  request_json(w, r.request);
  key(w, "retryMs");
  w.Int64(r.retry_ms);
  key(w, "finished");
  w.Bool(r.finished);
  if (r.finished) {
    key(w, "finishedMs");
    w.Int64(r.finished_ms);
    key(w, "finishedAt");
    str(w, utc(r.finished_ms));
  }
  key(w, "first");
  w.Uint64(r.first);
  key(w, "next");
  w.Uint64(r.next);
  key(w, "eventCount");
  w.Uint64(r.events);
  key(w, "bytes");
  w.Uint64(r.bytes);
  key(w, "omittedEvents");
  w.Uint64(stream.omitted);
  key(w, "events");
  w.StartArray();
  for (const auto& e : stream.events) {
    w.StartObject();
    key(w, "id");
    str(w, e.id.to_string());
    key(w, "seq");
    w.Uint64(e.id.seq);
    if (e.data.empty()) {
      key(w, "priming");
      w.Bool(true);
    } else {
      key(w, "message");
      json_value(w, e.data);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void session_json(JsonWriter& w, const StoreReport& report, const SessionReport& s) {
  w.StartObject();
  key(w, "id");
  str(w, s.object.id);
  key(w, "keys");
  w.Uint64(s.usage.data_keys);
  key(w, "bytes");
  w.Uint64(s.usage.data_bytes);
  key(w, "meta");
  if (s.snapshot.meta) {
    json_value(w, s.snapshot.meta->to_json());
  } else {
    w.Null();
  }
  key(w, "alarms");
  w.StartArray();
  for (const auto& a : s.alarms) alarm_json(w, a, false);
  w.EndArray();
  key(w, "journal");
  w.StartArray();
  for (const auto& j : s.snapshot.journal) journal_record_json(w, report, j);
  w.EndArray();
  key(w, "streams");
  w.StartArray();
  for (const auto& stream : s.snapshot.streams) stream_json(w, stream);
  w.EndArray();
  key(w, "problems");
  w.StartArray();
  for (const auto& p : s.snapshot.problems) bytes(w, p);
  w.EndArray();
  w.EndObject();
}

// ---- text ----

class Text {
 public:
  void line(const std::string& s = {}) {
    out_ += s;
    out_ += '\n';
  }
  // "  label       value", labels padded to one column.
  void field(std::string_view label, const std::string& value, std::size_t indent = 0) {
    std::string l(indent, ' ');
    l += label;
    if (l.size() < indent + 12) l.resize(indent + 12, ' ');
    line(l + " " + value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string shorten(const std::string& data) {
  std::string safe = terminal_safe(data);
  if (safe.size() <= kTextEventChars) return safe;
  return safe.substr(0, kTextEventChars) + "... (" + std::to_string(data.size()) +
         " bytes; --json shows it whole)";
}

void session_text(Text& t, const StoreReport& report, const SessionReport& s) {
  t.line("session " + s.object.id);
  if (const auto& m = s.snapshot.meta) {
    std::string client = "(none)";
    rapidjson::Document info;
    info.Parse(m->client_info.c_str());
    if (!info.HasParseError() && info.IsObject() && info.HasMember("name") &&
        info["name"].IsString()) {
      client = printable(info["name"].GetString());
      if (info.HasMember("version") && info["version"].IsString()) {
        client += " " + printable(info["version"].GetString());
      }
    }
    t.field("protocol", printable(m->protocol_version) + ", client " + client, 2);
    t.field("owner", owner_text(m->owner), 2);
    t.field("created",
            utc(m->created_ms) + (m->initialized ? ", initialized" : ", not initialized") +
                ", log level " + printable(m->log_level),
            2);
  } else {
    t.field("meta", "(none: not initialized, or deleted)", 2);
  }
  t.field(
      "storage",
      plural(s.usage.data_keys, "key", "keys") + ", " + plural(s.usage.data_bytes, "byte", "bytes"),
      2);
  for (const auto& a : s.alarms) {
    t.field(
        "alarm",
        (a.name.empty() ? std::string("(default)") : printable(a.name)) + " due " + utc(a.due_ms),
        2);
  }
  for (const auto& j : s.snapshot.journal) {
    t.field("in flight",
            "request " + request_text(j.request_key) + " on stream " +
                mcp::stream_key(j.record.stream) + ", generation " +
                std::to_string(j.record.epoch.generation) + " activation " +
                std::to_string(j.record.epoch.activation) +
                (earlier_generation(report, j.record) ? " (an earlier generation)" : ""),
            2);
  }
  for (const auto& stream : s.snapshot.streams) {
    const auto& r = stream.record;
    std::string what = "request " + request_text(r.request);
    what += r.finished ? ", finished " + utc(r.finished_ms) : ", open";
    what += ", " + plural(r.events, "event", "events") + " kept";
    if (r.events == 1) what += " (seq " + std::to_string(r.first) + ")";
    if (r.events > 1) {
      what += " (seq " + std::to_string(r.first) + "-" + std::to_string(r.next - 1) + ")";
    }
    what += ", " + plural(r.bytes, "byte", "bytes");
    if (r.retry_ms > 0) what += ", retry " + std::to_string(r.retry_ms) + " ms";
    t.field("stream", mcp::stream_key(r.id) + "  " + what, 2);
    if (stream.omitted > 0) {
      t.line("    (" + plural(stream.omitted, "older event", "older events") +
             " not shown: --events)");
    }
    for (const auto& e : stream.events) {
      t.line("    " + e.id.to_string() + "  " + (e.data.empty() ? "(priming)" : shorten(e.data)));
    }
  }
  for (const auto& p : s.snapshot.problems) t.field("problem", printable(p), 2);
  t.line();
}

}  // namespace

std::string format_json(const StoreReport& report) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  key(w, "storage");
  bytes(w, report.storage);
  key(w, "readOnly");
  w.Bool(true);
  key(w, "backup");
  if (report.backup) {
    const auto& b = *report.backup;
    w.StartObject();
    key(w, "source");
    bytes(w, b.source);
    key(w, "backend");
    str(w, storage::to_string(b.backend));
    key(w, "createdAt");
    str(w, utc(b.created_at_ms));
    key(w, "dormVersion");
    bytes(w, b.dorm_version);
    key(w, "keys");
    w.Uint64(b.contents.keys);
    key(w, "bytes");
    w.Uint64(b.contents.bytes);
    key(w, "generation");
    if (b.generation) {
      w.Uint64(*b.generation);
    } else {
      w.Null();
    }
    w.EndObject();
  } else {
    w.Null();
  }
  key(w, "runtime");
  w.StartObject();
  key(w, "generation");
  if (report.runtime.generation) {
    w.Uint64(*report.runtime.generation);
  } else {
    w.Null();
  }
  key(w, "cleanShutdownGeneration");
  if (report.runtime.clean_shutdown) {
    w.Uint64(*report.runtime.clean_shutdown);
  } else {
    w.Null();
  }
  key(w, "versionLabel");
  if (report.runtime.version_label) {
    bytes(w, *report.runtime.version_label);
  } else {
    w.Null();
  }
  key(w, "idSecret");
  w.Bool(report.runtime.has_id_secret);
  w.EndObject();

  key(w, "namespaces");
  w.StartArray();
  for (const auto& ns : report.namespaces) {
    w.StartObject();
    key(w, "name");
    str(w, ns.ns);
    key(w, "objects");
    w.Uint64(ns.objects);
    w.EndObject();
  }
  w.EndArray();

  key(w, "alarms");
  w.StartObject();
  key(w, "total");
  w.Uint64(report.alarms_total);
  key(w, "items");
  w.StartArray();
  for (const auto& a : report.alarms) alarm_json(w, a, true);
  w.EndArray();
  w.EndObject();

  key(w, "indexes");
  w.StartArray();
  for (const auto& index : report.indexes) index_json(w, index);
  w.EndArray();

  key(w, "sessions");
  w.StartObject();
  key(w, "total");
  w.Uint64(report.sessions_total);
  key(w, "limit");
  w.Uint64(report.options.limit);
  key(w, "selected");
  if (report.options.session.empty()) {
    w.Null();
  } else {
    bytes(w, report.options.session);
  }
  key(w, "items");
  w.StartArray();
  for (const auto& s : report.sessions) session_json(w, report, s);
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string format_text(const StoreReport& report) {
  Text t;
  t.field("storage", printable(report.storage) + " (opened read-only)");
  if (report.backup) {
    t.field("backup", "of " + printable(report.backup->source) + ", taken " +
                          utc(report.backup->created_at_ms) + " by dorm " +
                          printable(report.backup->dorm_version) + ": " +
                          plural(report.backup->contents.keys, "key", "keys"));
  }
  if (report.runtime.generation) {
    std::string marker = report.runtime.clean_shutdown == report.runtime.generation
                             ? "shut down cleanly"
                             : "no clean-shutdown marker: a runtime is running, or the last "
                               "one crashed";
    t.field("generation", std::to_string(*report.runtime.generation) + " (" + marker + ")");
  } else {
    t.field("generation", "none: no runtime has started on this store");
  }
  if (report.runtime.version_label && !report.runtime.version_label->empty()) {
    t.field("version", printable(*report.runtime.version_label));
  }
  if (!report.ids_complete) {
    t.line("(the store holds no id secret: object ids show their body only)");
  }
  t.line();

  t.line("namespaces");
  if (report.namespaces.empty()) t.line("  (none)");
  for (const auto& ns : report.namespaces) {
    t.field(ns.ns, plural(ns.objects, "object", "objects"), 2);
  }
  t.line();

  t.line("alarms: " + std::to_string(report.alarms_total) +
         (report.alarms_total ? ", earliest first" : ""));
  for (const auto& a : report.alarms) {
    t.line("  " + utc(a.due_ms) + "  " + a.object.ns + " " + a.object.id + "  " +
           (a.name.empty() ? std::string("(default)") : printable(a.name)));
  }
  if (report.alarms.size() < report.alarms_total) {
    t.line("  ... " + std::to_string(report.alarms_total - report.alarms.size()) +
           " more (--limit)");
  }
  t.line();

  for (const auto& index : report.indexes) {
    if (index.count.index == keys::kAlarmIndex) continue;
    t.line("index " + index.count.index + ": " + plural(index.count.entries, "entry", "entries"));
    for (const auto& e : index.entries) {
      auto parts = index.count.index == mcp::kInflightIndex ? mcp::parse_inflight_entry(e.key)
                                                            : std::nullopt;
      if (parts) {
        t.line("  session " + parts->session_object_id + "  request " +
               request_text(parts->request_key));
      } else {
        t.line("  " + printable(e.key) + (e.value.empty() ? "" : " = " + printable(e.value)));
      }
    }
    if (index.entries.size() < index.count.entries) {
      t.line("  ... " + std::to_string(index.count.entries - index.entries.size()) +
             " more (--limit)");
    }
    t.line();
  }

  std::string shown = "sessions: " + std::to_string(report.sessions_total) + " stored";
  if (!report.options.session.empty() && report.options.session != "all") {
    shown += ", showing the one asked for";
  } else if (report.sessions.size() < report.sessions_total) {
    shown += ", showing the first " + std::to_string(report.sessions.size()) +
             " (--limit N, or --session all|ID)";
  }
  t.line(shown);
  t.line();
  for (const auto& s : report.sessions) session_text(t, report, s);
  return t.take();
}

}  // namespace dorm::tools
