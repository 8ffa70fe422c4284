#include "dorm/storage/engine_log.hpp"

#include <memory>
#include <mutex>

namespace dorm::storage {
namespace {

// A shared_ptr swapped under a mutex: a line being written keeps the sink it started
// with alive, so set_engine_log_sink never waits for a slow line.
std::mutex sink_mutex;
std::shared_ptr<const EngineLogSink> current_sink;

}  // namespace

void set_engine_log_sink(EngineLogSink sink) {
  auto next = sink ? std::make_shared<const EngineLogSink>(std::move(sink)) : nullptr;
  std::lock_guard lock(sink_mutex);
  current_sink = std::move(next);
}

void engine_log(EngineLogLevel level, std::string_view engine, std::string_view message) noexcept {
  std::shared_ptr<const EngineLogSink> sink;
  {
    std::lock_guard lock(sink_mutex);
    sink = current_sink;
  }
  if (!sink) return;
  try {
    (*sink)(level, engine, message);
  } catch (...) {
    // Dropped: an engine's diagnostics must never fail the engine.
  }
}

}  // namespace dorm::storage
