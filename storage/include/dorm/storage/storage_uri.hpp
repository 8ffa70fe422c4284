// Storage URIs: how a store is named on the command line and in configuration.
//
//   rocksdb:PATH[?OPTIONS]   embedded RocksDB in directory PATH (the default store)
//   sqlite:PATH[?OPTIONS]    SQLite database file PATH
//   memory:[?OPTIONS]        an in-memory store, gone when the process exits
//
// OPTIONS is `name=value` pairs joined by `&`:
//   durability=process|fsync   see Backend (default: process)
//
// PATH is taken literally up to the first `?` (no percent-decoding); it may be relative to
// the working directory. Every URI is parsed here and nowhere else.
#pragma once

#include <string>
#include <string_view>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::storage {

enum class Scheme { rocksdb, sqlite, memory };

std::string_view to_string(Scheme s) noexcept;

struct StorageUri {
  Scheme scheme = Scheme::rocksdb;
  std::string path;  // empty for memory:
  Durability durability = Durability::process;

  // The canonical form, e.g. "rocksdb:./dorm-data?durability=fsync"; parses back to an
  // equal StorageUri. The default durability is left out.
  std::string to_string() const;

  friend bool operator==(const StorageUri&, const StorageUri&) = default;
};

// Parses `uri`. Errors (invalid_argument, naming the URI and what is wrong): an unknown or
// missing scheme, an empty path for rocksdb or sqlite, a path for memory, an unknown,
// repeated or empty option, an option without `=`, or a value not allowed for the option.
Result<StorageUri> parse_storage_uri(std::string_view uri);

}  // namespace dorm::storage
