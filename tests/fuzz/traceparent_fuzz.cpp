// libFuzzer target: TraceContext::from_traceparent never crashes, accepts only valid
// contexts, and a version-00 header it accepts prints back byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dorm/runtime/tracing.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ctx = dorm::trace::TraceContext::from_traceparent(text);
  if (!ctx) return 0;
  if (!ctx->valid()) std::abort();
  auto printed = ctx->traceparent();
  if (text.substr(0, 2) == "00" && printed != std::string(text.substr(0, 52)) + (ctx->sampled ? "-01" : "-00")) {
    std::abort();
  }
  auto again = dorm::trace::TraceContext::from_traceparent(printed);
  if (!again || !(*again == *ctx)) std::abort();
  return 0;
}
