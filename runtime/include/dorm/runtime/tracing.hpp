// Tracing — spans for what the runtime does on its own: activations, alarm deliveries,
// resets (and, above it, the MCP reaper).
//
// A span is a named interval with attributes, a status, events (a recorded exception is an
// event named "exception" with `exception.type` and `exception.message`, as OpenTelemetry
// has it), an optional parent and links to other spans. Spans are identified the W3C Trace
// Context way (16-byte trace id, 8-byte span id), so a `traceparent` header that arrived
// with a request can become a span's parent and an outgoing one can be written from a
// span's context.
//
// A Tracer decides what happens to a finished span (on_end): nothing (no tracer is set),
// kept in memory (RecordingTracer, for tests) or written out (OtlpJsonFileTracer). Spans
// are timed on the Tracer's dorm::Clock, so on a VirtualClock their times are virtual too.
// Every method may be called from any thread; a Span itself belongs to one thread.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dorm/runtime/clock.hpp"

namespace dorm::trace {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

// The W3C Trace Context of one span: which trace it belongs to and which span it is.
struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};
  bool sampled = true;

  // A context is valid when neither id is all zeros (the W3C rule).
  bool valid() const;
  // "00-<32 hex trace id>-<16 hex span id>-<01|00>".
  std::string traceparent() const;
  // Parses a `traceparent` header value (version 00, or a later version's first four
  // fields). None for anything malformed or with an all-zero id: such a header is ignored,
  // never an error, as the W3C specification asks.
  static std::optional<TraceContext> from_traceparent(std::string_view header);
  friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

std::string to_hex(const TraceId& id);
std::string to_hex(const SpanId& id);

using AttributeValue = std::variant<std::string, std::int64_t, double, bool>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

struct SpanEvent {
  std::string name;
  std::int64_t time_unix_nano = 0;
  std::vector<Attribute> attributes;
};

struct SpanLink {
  TraceContext context;
  std::vector<Attribute> attributes;
};

// OpenTelemetry's status codes: unset until someone says ok or error.
enum class SpanStatus { unset, ok, error };

// A finished span, as a Tracer receives it.
struct SpanData {
  std::string name;
  TraceContext context;
  std::optional<SpanId> parent_span_id;
  std::int64_t start_unix_nano = 0;
  std::int64_t end_unix_nano = 0;
  std::vector<Attribute> attributes;
  std::vector<SpanEvent> events;
  std::vector<SpanLink> links;
  SpanStatus status = SpanStatus::unset;
  std::string status_message;

  // The attribute named `key`, if set (the last one set wins).
  const AttributeValue* attribute(std::string_view key) const;
  // The first event named `name`, if any.
  const SpanEvent* event(std::string_view name) const;
};

struct SpanOptions {
  // The parent span (same trace); none starts a new trace.
  std::optional<TraceContext> parent;
  std::vector<SpanLink> links;
  std::vector<Attribute> attributes;
};

class Tracer;

// A span being recorded. Move-only; it ends (and goes to its tracer) when end() is called
// or when it is destroyed. A default-constructed Span records nothing, so code can hold
// one whether or not a tracer is configured.
class Span {
 public:
  Span() = default;
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  ~Span();

  bool recording() const { return tracer_ != nullptr; }
  // This span's context (invalid when not recording).
  TraceContext context() const { return data_.context; }

  void set_attribute(std::string key, AttributeValue value);
  void add_event(std::string name, std::vector<Attribute> attributes = {});
  // Records an exception event and sets the status to error with `message`.
  void record_exception(std::string type, std::string message);
  void set_status(SpanStatus status, std::string message = {});
  // Ends the span now. Later calls (and the destructor) do nothing.
  void end();

 private:
  friend class Tracer;
  Span(Tracer* tracer, SpanData data) : tracer_(tracer), data_(std::move(data)) {}
  Tracer* tracer_ = nullptr;
  SpanData data_;
};

class Tracer {
 public:
  // Times spans on `clock` (the system clock when null), which must outlive the tracer.
  explicit Tracer(const Clock* clock = nullptr);
  virtual ~Tracer() = default;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Starts a span now: a child of options.parent if given, else the root of a new trace.
  Span start_span(std::string name, SpanOptions options = {});
  // Writes out anything buffered. The default does nothing.
  virtual void flush() {}

 protected:
  // Receives every finished span exactly once, on the thread that ended it.
  virtual void on_end(SpanData&& span) = 0;

 private:
  friend class Span;
  std::int64_t now_unix_nano() const;
  const Clock* clock_;
};

// Keeps finished spans in memory, for tests.
class RecordingTracer : public Tracer {
 public:
  using Tracer::Tracer;
  // Every finished span so far, in the order they ended.
  std::vector<SpanData> spans() const;
  // Finished spans named `name`, in the order they ended.
  std::vector<SpanData> spans_named(std::string_view name) const;
  void clear();

 protected:
  void on_end(SpanData&& span) override;

 private:
  mutable std::mutex mutex_;
  std::vector<SpanData> spans_;
};

// Attribute names the runtime's spans use.
namespace attr {
inline constexpr const char* kNamespace = "dorm.namespace";
inline constexpr const char* kObjectId = "dorm.object_id";
inline constexpr const char* kStartReason = "dorm.start_reason";
inline constexpr const char* kEpochGeneration = "dorm.epoch.generation";
inline constexpr const char* kEpochActivation = "dorm.epoch.activation";
inline constexpr const char* kAlarmName = "dorm.alarm.name";
inline constexpr const char* kAlarmAttempt = "dorm.alarm.attempt";
inline constexpr const char* kAlarmScheduledMs = "dorm.alarm.scheduled_ms";
inline constexpr const char* kAlarmLatenessMs = "dorm.alarm.lateness_ms";
inline constexpr const char* kAlarmExhausted = "dorm.alarm.exhausted";
inline constexpr const char* kResetReason = "dorm.reset.reason";
}  // namespace attr

// Span names the runtime emits.
inline constexpr const char* kActivationSpan = "dorm.activation";
inline constexpr const char* kAlarmSpan = "dorm.alarm";
inline constexpr const char* kResetSpan = "dorm.reset";

}  // namespace dorm::trace
