// What dorm plugs into RocksDB so that a full disk is an error it answers, not an abort:
// a Logger that hands RocksDB's info log to engine_log.hpp (no LOG file), and an
// EventListener that notes when the database stops taking writes and turns RocksDB's own
// recovery off (RocksDbBackend resumes the database itself; see rocksdb_backend.hpp).
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/listener.h>

#include <atomic>
#include <memory>

namespace dorm::storage::detail {

// Formats each line into a bounded buffer (a longer line is cut) and hands it on; a line
// that cannot be handed on is dropped. Never writes a file, so a full disk cannot fail it.
class EngineLogger final : public rocksdb::Logger {
 public:
  EngineLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {}
  void Logv(const char* format, va_list ap) override;
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override;
};

class StoreEvents final : public rocksdb::EventListener {
 public:
  explicit StoreEvents(std::shared_ptr<std::atomic<bool>> stopped) : stopped_(std::move(stopped)) {}

  // A background error stops writes (a flush or WAL write that hit ENOSPC, say): noted,
  // so the next check with space free calls DB::Resume.
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override;
  // RocksDB's own recovery waits for its SstFileManager to see 64 MiB free, retrying (and
  // logging) every 5 s; the backend's reserve decides when to resume instead.
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason reason, rocksdb::Status error,
                            bool* auto_recovery) override;

 private:
  std::shared_ptr<std::atomic<bool>> stopped_;
};

}  // namespace dorm::storage::detail
