#include "dorm/runtime/otlp_file_tracer.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstring>

#include "dorm/runtime/log.hpp"

namespace dorm::trace {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// OTLP/JSON encodes 64-bit integers (times, int attributes) as decimal strings.
void write_int64_string(JsonWriter& w, std::int64_t v) { write_string(w, std::to_string(v)); }

void write_any_value(JsonWriter& w, const AttributeValue& value) {
  w.StartObject();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          w.Key("stringValue");
          write_string(w, v);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          w.Key("intValue");
          write_int64_string(w, v);
        } else if constexpr (std::is_same_v<T, double>) {
          w.Key("doubleValue");
          w.Double(v);
        } else {
          w.Key("boolValue");
          w.Bool(v);
        }
      },
      value);
  w.EndObject();
}

void write_attributes(JsonWriter& w, const std::vector<Attribute>& attributes) {
  w.Key("attributes");
  w.StartArray();
  for (const auto& a : attributes) {
    w.StartObject();
    w.Key("key");
    write_string(w, a.key);
    w.Key("value");
    write_any_value(w, a.value);
    w.EndObject();
  }
  w.EndArray();
}

int status_code(SpanStatus s) {
  switch (s) {
    case SpanStatus::unset: return 0;
    case SpanStatus::ok: return 1;
    case SpanStatus::error: return 2;
  }
  return 0;
}

// One span of OTLP/JSON's "spans" array.
void write_span(JsonWriter& w, const SpanData& span) {
  w.StartObject();
  w.Key("traceId");
  write_string(w, to_hex(span.context.trace_id));
  w.Key("spanId");
  write_string(w, to_hex(span.context.span_id));
  if (span.parent_span_id) {
    w.Key("parentSpanId");
    write_string(w, to_hex(*span.parent_span_id));
  }
  w.Key("flags");
  w.Uint(span.context.sampled ? 1 : 0);
  w.Key("name");
  write_string(w, span.name);
  w.Key("kind");
  w.Int(1);  // SPAN_KIND_INTERNAL: the runtime's own work
  w.Key("startTimeUnixNano");
  write_int64_string(w, span.start_unix_nano);
  w.Key("endTimeUnixNano");
  write_int64_string(w, span.end_unix_nano);
  write_attributes(w, span.attributes);
  w.Key("events");
  w.StartArray();
  for (const auto& e : span.events) {
    w.StartObject();
    w.Key("timeUnixNano");
    write_int64_string(w, e.time_unix_nano);
    w.Key("name");
    write_string(w, e.name);
    write_attributes(w, e.attributes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("links");
  w.StartArray();
  for (const auto& l : span.links) {
    w.StartObject();
    w.Key("traceId");
    write_string(w, to_hex(l.context.trace_id));
    w.Key("spanId");
    write_string(w, to_hex(l.context.span_id));
    write_attributes(w, l.attributes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("status");
  w.StartObject();
  w.Key("code");
  w.Int(status_code(span.status));
  if (!span.status_message.empty()) {
    w.Key("message");
    write_string(w, span.status_message);
  }
  w.EndObject();
  w.EndObject();
}

}  // namespace


OtlpJsonFileTracer::OtlpJsonFileTracer(std::FILE* file, std::string path,
                                       std::string service_name, const Clock* clock)
    : Tracer(clock), file_(file), path_(std::move(path)), service_name_(std::move(service_name)) {}

Result<std::unique_ptr<OtlpJsonFileTracer>> OtlpJsonFileTracer::open(const std::string& path,
                                                                     std::string service_name,
                                                                     const Clock* clock) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (!file) {
    return Error{ErrorCode::io_error,
                 "cannot open trace file '" + path + "': " + std::strerror(errno)};
  }
  return std::unique_ptr<OtlpJsonFileTracer>(
      new OtlpJsonFileTracer(file, path, std::move(service_name), clock));
}

OtlpJsonFileTracer::~OtlpJsonFileTracer() { std::fclose(file_); }

void OtlpJsonFileTracer::flush() {
  std::lock_guard lock(mutex_);
  std::fflush(file_);
}

std::string OtlpJsonFileTracer::encode(const SpanData& span, std::string_view service_name) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("resourceSpans");
  w.StartArray();
  w.StartObject();
  w.Key("resource");
  w.StartObject();
  write_attributes(w, {{"service.name", std::string(service_name)}});
  w.EndObject();
  w.Key("scopeSpans");
  w.StartArray();
  w.StartObject();
  w.Key("scope");
  w.StartObject();
  w.Key("name");
  w.String("dorm");
  w.EndObject();
  w.Key("spans");
  w.StartArray();

  write_span(w, span);
  w.EndArray();   // spans
  w.EndObject();  // scopeSpans[0]
  w.EndArray();
  w.EndObject();  // resourceSpans[0]
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

void OtlpJsonFileTracer::on_end(SpanData&& span) {
  std::string line = encode(span, service_name_);
  line.push_back('\n');
  std::lock_guard lock(mutex_);
  bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() &&
            std::fflush(file_) == 0;
  if (!ok && !write_failed_) {
    write_failed_ = true;
    log::error("trace_write_failed", {{"path", path_}, {"error", std::strerror(errno)}});
  }
  if (ok) write_failed_ = false;
}

}  // namespace dorm::trace
