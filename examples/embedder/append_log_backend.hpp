// AppendLogBackend — an example of a custom dorm storage backend.
//
// Keeps every key in memory (a std::map) and makes commits durable by appending one record
// per commit to a log file, which is replayed when the store is opened. Small enough to
// read in one sitting, and it keeps the whole Backend contract, so it passes dorm's
// conformance kit: byte-wise order, atomic batches (a record torn by a crash is cut off at
// replay, so a commit is all or nothing), both durability modes, one owner at a time.
//
// It compiles against dorm's storage headers only — no CAF, no RocksDB API.
#pragma once

#include <dorm/storage/backend.hpp>

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>

namespace example {

class AppendLogBackend final : public dorm::storage::Backend {
 public:
  // Opens (creating if missing) the log at `path` and replays it.
  // Errors: busy if another process has it open; io_error if it cannot be read or written.
  static dorm::Result<std::unique_ptr<AppendLogBackend>> open(
      const std::string& path, dorm::storage::Durability durability);
  ~AppendLogBackend() override;

  dorm::Result<std::optional<std::string>> get(std::string_view key) override;
  dorm::Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override;
  dorm::Result<std::vector<dorm::storage::KeyValue>> scan(
      const dorm::storage::ScanOptions& options) override;
  dorm::Result<void> commit(const dorm::storage::WriteBatch& batch) override;
  dorm::storage::Durability durability() const override { return durability_; }
  std::string describe() const override { return "append-log:" + path_; }

 private:
  AppendLogBackend(std::string path, dorm::storage::Durability durability, int fd)
      : path_(std::move(path)), durability_(durability), fd_(fd) {}
  void apply(const dorm::storage::WriteBatch& batch);  // caller holds mutex_ exclusively

  const std::string path_;
  const dorm::storage::Durability durability_;
  const int fd_;  // the log, opened for appending, flock'ed
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::string, std::less<>> data_;
};

}  // namespace example
