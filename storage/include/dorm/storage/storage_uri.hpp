// Storage URIs: how a store is named on the command line and in configuration.
//
//   rocksdb:PATH[?OPTIONS]   embedded RocksDB in directory PATH (the default store)
//   sqlite:PATH[?OPTIONS]    SQLite database file PATH
//   memory:[?OPTIONS]        an in-memory store, gone when the process exits
//   postgres://[USER@]HOST[:PORT]/DB[?OPTIONS]
//                            a table in a PostgreSQL database (postgres_backend.hpp);
//                            `postgresql:` is the same scheme
//   NAME:[PATH][?OPTIONS]    a scheme a program registered (register_storage_scheme in
//                            open.hpp): its factory opens it
//
// OPTIONS is `name=value` pairs joined by `&`:
//   durability=process|fsync   see Backend (default: process)
//   reserve=SIZE|P%|0          rocksdb only: free space to keep on the store's filesystem;
//                              commits that would eat into it are refused with no_space
//                              (default 128MiB; see space_reserve.hpp, docs/storage.md)
//   table=NAME                 postgres only: the table holding the store (default dorm_kv)
//   pool=N                     postgres only: connections to keep (1-64, default 4)
//   lock_wait=SECONDS          postgres only: how long an open waits for an earlier owner's
//                              lock to go (0-3600, default 10)
// Every other option of a postgres URI is libpq's own (sslmode, connect_timeout, host for a
// Unix socket directory, passfile, ...), checked by libpq when the URI is parsed.
// A registered scheme takes `durability` too; every other option is handed to its factory
// as written, which accepts or refuses it (the parser only checks the `name=value` form).
//
// PATH is taken literally up to the first `?` (no percent-decoding); it may be relative to
// the working directory. Every URI is parsed here and nowhere else.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/space_reserve.hpp"

namespace dorm::storage {

// `registered`: a scheme a program added with register_storage_scheme (open.hpp).
enum class Scheme { rocksdb, sqlite, memory, postgres, registered };

std::string_view to_string(Scheme s) noexcept;

struct StorageUri {
  Scheme scheme = Scheme::rocksdb;
  // Scheme::registered: the scheme's name, as registered; empty otherwise.
  std::string registered_scheme;
  std::string path;  // empty for memory:
  Durability durability = Durability::process;
  // rocksdb only; absent: the default reserve.
  std::optional<ReserveSpec> reserve;
  // Scheme::registered and Scheme::postgres: the options other than durability, as
  // (name, value) in the order written, for the scheme's factory to read; empty otherwise.
  std::vector<std::pair<std::string, std::string>> options;

  // "rocksdb", "sqlite", "memory", "postgres" or the registered scheme's name.
  std::string_view scheme_name() const noexcept;

  // The canonical form, e.g. "rocksdb:./dorm-data?durability=fsync&reserve=64MiB"; parses
  // back to an equal StorageUri (a registered scheme's, while it is registered). The
  // default durability and an absent reserve are left out; a registered scheme's own
  // options follow durability, in their order.
  std::string to_string() const;

  friend bool operator==(const StorageUri&, const StorageUri&) = default;
};

// Parses `uri`. A scheme other than the three built in ones must be registered now
// (register_storage_scheme). Errors (invalid_argument, naming the URI and what is wrong):
// an unknown or missing scheme, an empty path for rocksdb or sqlite, a path for memory, an
// unknown, repeated or empty option, an option without `=`, a value not allowed for the
// option, or `reserve` on sqlite or memory.
Result<StorageUri> parse_storage_uri(std::string_view uri);

}  // namespace dorm::storage
