// Storage URIs: how a store is named on the command line and in configuration.
//
//   rocksdb:PATH[?OPTIONS]   embedded RocksDB in directory PATH (the default store)
//   sqlite:PATH[?OPTIONS]    SQLite database file PATH
//   memory:[?OPTIONS]        an in-memory store, gone when the process exits
//
// OPTIONS is `name=value` pairs joined by `&`:
//   durability=process|fsync   see Backend (default: process)
//   reserve=SIZE|P%|0          rocksdb only: free space to keep on the store's filesystem;
//                              commits that would eat into it are refused with no_space
//                              (default 128MiB; see space_reserve.hpp, docs/storage.md)
//
// PATH is taken literally up to the first `?` (no percent-decoding); it may be relative to
// the working directory. Every URI is parsed here and nowhere else.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/space_reserve.hpp"

namespace dorm::storage {

enum class Scheme { rocksdb, sqlite, memory };

std::string_view to_string(Scheme s) noexcept;

struct StorageUri {
  Scheme scheme = Scheme::rocksdb;
  std::string path;  // empty for memory:
  Durability durability = Durability::process;
  // rocksdb only; absent: the default reserve.
  std::optional<ReserveSpec> reserve;

  // The canonical form, e.g. "rocksdb:./dorm-data?durability=fsync&reserve=64MiB"; parses
  // back to an equal StorageUri. The default durability and an absent reserve are left out.
  std::string to_string() const;

  friend bool operator==(const StorageUri&, const StorageUri&) = default;
};

// Parses `uri`. Errors (invalid_argument, naming the URI and what is wrong): an unknown or
// missing scheme, an empty path for rocksdb or sqlite, a path for memory, an unknown,
// repeated or empty option, an option without `=`, a value not allowed for the option, or
// `reserve` on a scheme other than rocksdb.
Result<StorageUri> parse_storage_uri(std::string_view uri);

}  // namespace dorm::storage
