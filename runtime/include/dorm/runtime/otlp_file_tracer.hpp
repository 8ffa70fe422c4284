// OtlpJsonFileTracer — writes every finished span to a file as one line of OTLP JSON.
//
// Each line is a complete OTLP/JSON `ExportTraceServiceRequest` holding one span
// (`resourceSpans[0].scopeSpans[0].spans[0]`), in the encoding the OpenTelemetry
// Collector's file receiver and `otlpjsonfile` read: ids as lowercase hex, times as
// decimal strings of Unix nanoseconds, attribute values as typed `AnyValue` objects,
// status codes 0 (unset), 1 (ok), 2 (error). A line is written and flushed when its span
// ends, so a process killed right after a span still leaves it in the file.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "dorm/result.hpp"
#include "dorm/runtime/tracing.hpp"

namespace dorm::trace {

class OtlpJsonFileTracer final : public Tracer {
 public:
  // Opens (creating or appending to) `path`. `service_name` becomes the resource's
  // `service.name`. Errors: io_error naming the path and the OS error.
  static Result<std::unique_ptr<OtlpJsonFileTracer>> open(const std::string& path,
                                                          std::string service_name = "dorm",
                                                          const Clock* clock = nullptr);
  ~OtlpJsonFileTracer() override;

  void flush() override;

  // One span as the JSON line this tracer writes (without the newline).
  static std::string encode(const SpanData& span, std::string_view service_name);

 protected:
  void on_end(SpanData&& span) override;

 private:
  OtlpJsonFileTracer(std::FILE* file, std::string path, std::string service_name,
                     const Clock* clock);
  std::mutex mutex_;
  std::FILE* file_;
  std::string path_;
  std::string service_name_;
  bool write_failed_ = false;  // logged once, not per span
};

}  // namespace dorm::trace
