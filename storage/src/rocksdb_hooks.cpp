#include "rocksdb_hooks.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <string_view>

#include "dorm/storage/engine_log.hpp"

namespace dorm::storage::detail {
namespace {

// Longer lines (a few of RocksDB's option dumps) are cut here.
constexpr std::size_t kMaxLine = 2048;

EngineLogLevel level_of(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::InfoLogLevel::WARN_LEVEL: return EngineLogLevel::warn;
    case rocksdb::InfoLogLevel::ERROR_LEVEL:
    case rocksdb::InfoLogLevel::FATAL_LEVEL: return EngineLogLevel::error;
    case rocksdb::InfoLogLevel::INFO_LEVEL:
    case rocksdb::InfoLogLevel::HEADER_LEVEL: return EngineLogLevel::info;
    default: return EngineLogLevel::debug;
  }
}

}  // namespace

void EngineLogger::Logv(const char* format, va_list ap) {
  Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
}

void EngineLogger::Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) {
  if (level < GetInfoLogLevel()) return;
  char line[kMaxLine];
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(line, sizeof line, format, copy);
  va_end(copy);
  if (n < 0) return;  // unformattable: dropped
  std::string_view text(line, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  engine_log(level_of(level), "rocksdb", text);
}

void StoreEvents::OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* error) {
  if (error && !error->ok()) stopped_->store(true, std::memory_order_release);
}

void StoreEvents::OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status error,
                                       bool* auto_recovery) {
  error.PermitUncheckedError();
  if (auto_recovery) *auto_recovery = false;
}

}  // namespace dorm::storage::detail
