#include "dorm/storage/open.hpp"

#include <sys/stat.h>

#include "dorm/storage/backup.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/postgres_backend.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/sqlite_backend.hpp"
#include "open_store.hpp"
#include "scheme_registry.hpp"

namespace dorm::storage {

Result<std::unique_ptr<Backend>> detail::open_store(const StorageUri& uri, OpenMode mode) {
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
    case Scheme::postgres: {
      auto settings = PostgresBackend::settings_from(uri);
      if (!settings) {
        return Error{ErrorCode::invalid_argument, "invalid storage URI '" + uri.to_string() +
                                                      "': " + settings.error().message};
      }
      return widen(PostgresBackend::open(*settings, mode));
    }
    case Scheme::registered: {
      auto factory = detail::find_storage_scheme(uri.registered_scheme);
      if (!factory) {
        return Error{ErrorCode::invalid_argument, "'" + uri.to_string() + "': storage scheme '" +
                                                      uri.registered_scheme +
                                                      "' is not registered"};
      }
      auto opened = (*factory)(uri, mode);
      if (opened && !*opened) {
        return Error{ErrorCode::internal, "the factory of storage scheme '" +
                                              uri.registered_scheme + "' returned no backend"};
      }
      return opened;
    }
  }
  return Error{ErrorCode::internal, "unhandled storage scheme"};
}

Result<std::unique_ptr<Backend>> open_backend(const StorageUri& uri, OpenMode mode) {
  if (mode == OpenMode::read_write) {
    // A store whose restore was cut short holds only part of its backup: serving it
    // would look like lost data. Read-only opens (inspect) may still look at it.
    std::string marker = restore_marker_path(uri);
    struct stat st {};
    if (!marker.empty() && ::lstat(marker.c_str(), &st) == 0) {
      return Error{ErrorCode::unavailable,
                   "'" + uri.to_string() +
                       "' holds an unfinished restore (a `dorm restore` into it was cut "
                       "short; its marker is '" + marker +
                       "'): run the restore again with --force, or remove the store"};
    }
  }
  return detail::open_store(uri, mode);
}

Result<std::unique_ptr<Backend>> open_backend(std::string_view uri, OpenMode mode) {
  auto parsed = parse_storage_uri(uri);
  if (!parsed) return std::move(parsed).error();
  return open_backend(*parsed, mode);
}

}  // namespace dorm::storage
