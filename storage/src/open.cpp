#include "dorm/storage/open.hpp"

#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/sqlite_backend.hpp"

namespace dorm::storage {

Result<std::unique_ptr<Backend>> open_backend(const StorageUri& uri, OpenMode mode) {
  auto widen = [](auto result) -> Result<std::unique_ptr<Backend>> {
    if (!result) return std::move(result).error();
    return std::unique_ptr<Backend>(std::move(result).value());
  };
  switch (uri.scheme) {
    case Scheme::rocksdb: {
      RocksDbBackend::Tuning tuning;
      if (uri.reserve) tuning.reserve = *uri.reserve;
      return widen(RocksDbBackend::open(uri.path, uri.durability, mode, tuning));
    }
    case Scheme::sqlite: return widen(SqliteBackend::open(uri.path, uri.durability, mode));
    case Scheme::memory:
      if (mode == OpenMode::read_only) {
        return Error{ErrorCode::invalid_argument,
                     "'" + uri.to_string() +
                         "' cannot be opened read-only: a memory store starts empty and "
                         "lives only inside the process that made it"};
      }
      return std::unique_ptr<Backend>(std::make_unique<MemoryBackend>(uri.durability));
  }
  return Error{ErrorCode::internal, "unhandled storage scheme"};
}

Result<std::unique_ptr<Backend>> open_backend(std::string_view uri, OpenMode mode) {
  auto parsed = parse_storage_uri(uri);
  if (!parsed) return std::move(parsed).error();
  return open_backend(*parsed, mode);
}

}  // namespace dorm::storage
