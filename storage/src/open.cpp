#include "dorm/storage/open.hpp"

#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/sqlite_backend.hpp"

namespace dorm::storage {

Result<std::unique_ptr<Backend>> open_backend(const StorageUri& uri) {
  auto widen = [](auto result) -> Result<std::unique_ptr<Backend>> {
    if (!result) return std::move(result).error();
    return std::unique_ptr<Backend>(std::move(result).value());
  };
  switch (uri.scheme) {
    case Scheme::rocksdb: return widen(RocksDbBackend::open(uri.path, uri.durability));
    case Scheme::sqlite: return widen(SqliteBackend::open(uri.path, uri.durability));
    case Scheme::memory:
      return std::unique_ptr<Backend>(std::make_unique<MemoryBackend>(uri.durability));
  }
  return Error{ErrorCode::internal, "unhandled storage scheme"};
}

Result<std::unique_ptr<Backend>> open_backend(std::string_view uri) {
  auto parsed = parse_storage_uri(uri);
  if (!parsed) return std::move(parsed).error();
  return open_backend(*parsed);
}

}  // namespace dorm::storage
