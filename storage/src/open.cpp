#include "dorm/storage/open.hpp"

#include <rocksdb/db.h>
#include <rocksdb/options.h>

namespace dorm::storage {
namespace {

class RocksDbHandle final : public StorageHandle {
 public:
  RocksDbHandle(std::string path, std::unique_ptr<rocksdb::DB> db)
      : path_(std::move(path)), db_(std::move(db)) {}
  std::string describe() const override { return "rocksdb:" + path_; }

 private:
  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

Result<std::unique_ptr<StorageHandle>> open_storage(std::string_view uri) {
  constexpr std::string_view kRocksDb = "rocksdb:";
  if (!uri.starts_with(kRocksDb)) {
    return Error{ErrorCode::invalid_argument,
                 "unknown storage URI '" + std::string(uri) + "': expected rocksdb:PATH"};
  }
  std::string path{uri.substr(kRocksDb.size())};
  if (path.empty()) {
    return Error{ErrorCode::invalid_argument, "storage URI 'rocksdb:' names no path"};
  }
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status status = rocksdb::DB::Open(options, path, &raw);
  if (!status.ok()) {
    // RocksDB reports a held LOCK file as an IOError whose text mentions the lock.
    bool locked = status.ToString().find("lock") != std::string::npos;
    return Error{locked ? ErrorCode::busy : ErrorCode::io_error,
                 "cannot open rocksdb at '" + path + "': " + status.ToString()};
  }
  return std::unique_ptr<StorageHandle>(
      std::make_unique<RocksDbHandle>(path, std::unique_ptr<rocksdb::DB>(raw)));
}

}  // namespace dorm::storage
