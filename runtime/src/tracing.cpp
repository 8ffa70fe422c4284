#include "dorm/runtime/tracing.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>

#include "dorm/hex.hpp"

namespace dorm::trace {
namespace {

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

template <std::size_t N>
void random_id(std::array<std::uint8_t, N>& out) {
  // An all-zero id is invalid; RAND_bytes failing (never seen on Linux) leaves one, so
  // retry, and fall back to a nonzero byte rather than emit an invalid span.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (RAND_bytes(out.data(), static_cast<int>(N)) == 1 && !all_zero(out)) return;
  }
  out[N - 1] = 1;
}

}  // namespace

bool TraceContext::valid() const { return !all_zero(trace_id) && !all_zero(span_id); }

std::string TraceContext::traceparent() const {
  return "00-" + hex_encode(trace_id) + "-" + hex_encode(span_id) + (sampled ? "-01" : "-00");
}

std::optional<TraceContext> TraceContext::from_traceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" flags; 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 chars.
  // A later version may append "-" fields; version ff is forbidden. Hex digits are lower
  // case only.
  if (header.size() < 55 || (header.size() > 55 && header[55] != '-')) return std::nullopt;
  std::array<std::uint8_t, 1> version{}, flags{};
  TraceContext ctx;
  if (!hex_decode(header.substr(0, 2), version) || header[2] != '-' ||
      !hex_decode(header.substr(3, 32), ctx.trace_id) || header[35] != '-' ||
      !hex_decode(header.substr(36, 16), ctx.span_id) || header[52] != '-' ||
      !hex_decode(header.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (version[0] == 0xff || (version[0] == 0 && header.size() != 55)) return std::nullopt;
  if (!ctx.valid()) return std::nullopt;
  ctx.sampled = (flags[0] & 1) != 0;
  return ctx;
}

std::string to_hex(const TraceId& id) { return hex_encode(id); }
std::string to_hex(const SpanId& id) { return hex_encode(id); }

const AttributeValue* SpanData::attribute(std::string_view key) const {
  for (auto it = attributes.rbegin(); it != attributes.rend(); ++it) {
    if (it->key == key) return &it->value;
  }
  return nullptr;
}

const SpanEvent* SpanData::event(std::string_view event_name) const {
  for (const auto& e : events) {
    if (e.name == event_name) return &e;
  }
  return nullptr;
}

// ---- Span ----

Span::Span(Span&& other) noexcept
    : tracer_(std::exchange(other.tracer_, nullptr)), data_(std::move(other.data_)) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    end();
    tracer_ = std::exchange(other.tracer_, nullptr);
    data_ = std::move(other.data_);
  }
  return *this;
}

Span::~Span() { end(); }

void Span::set_attribute(std::string key, AttributeValue value) {
  if (!tracer_) return;
  for (auto& a : data_.attributes) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  data_.attributes.push_back({std::move(key), std::move(value)});
}

void Span::add_event(std::string name, std::vector<Attribute> attributes) {
  if (!tracer_) return;
  data_.events.push_back({std::move(name), tracer_->now_unix_nano(), std::move(attributes)});
}

void Span::record_exception(std::string type, std::string message) {
  if (!tracer_) return;
  add_event("exception", {{"exception.type", std::move(type)}, {"exception.message", message}});
  set_status(SpanStatus::error, std::move(message));
}

void Span::set_status(SpanStatus status, std::string message) {
  if (!tracer_) return;
  data_.status = status;
  // OpenTelemetry keeps a description only for errors.
  data_.status_message = status == SpanStatus::error ? std::move(message) : std::string();
}

void Span::end() {
  if (!tracer_) return;
  Tracer* tracer = std::exchange(tracer_, nullptr);
  data_.end_unix_nano = tracer->now_unix_nano();
  tracer->on_end(std::move(data_));
  data_ = SpanData{};
}

// ---- Tracer ----

Tracer::Tracer(const Clock* clock) : clock_(clock) {}

std::int64_t Tracer::now_unix_nano() const {
  if (clock_) return clock_->now_ms() * 1'000'000;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Span Tracer::start_span(std::string name, SpanOptions options) {
  SpanData data;
  data.name = std::move(name);
  if (options.parent && options.parent->valid()) {
    data.context.trace_id = options.parent->trace_id;
    data.context.sampled = options.parent->sampled;
    data.parent_span_id = options.parent->span_id;
  } else {
    random_id(data.context.trace_id);
  }
  random_id(data.context.span_id);
  data.start_unix_nano = now_unix_nano();
  data.attributes = std::move(options.attributes);
  data.links = std::move(options.links);
  return Span(this, std::move(data));
}

// ---- RecordingTracer ----

std::vector<SpanData> RecordingTracer::spans() const {
  std::lock_guard lock(mutex_);
  return spans_;
}

std::vector<SpanData> RecordingTracer::spans_named(std::string_view name) const {
  std::lock_guard lock(mutex_);
  std::vector<SpanData> out;
  for (const auto& s : spans_) {
    if (s.name == name) out.push_back(s);
  }
  return out;
}

void RecordingTracer::clear() {
  std::lock_guard lock(mutex_);
  spans_.clear();
}

void RecordingTracer::on_end(SpanData&& span) {
  std::lock_guard lock(mutex_);
  spans_.push_back(std::move(span));
}

}  // namespace dorm::trace
