// Opening the store named by a storage URI.
//
// Interim: this is the one function the storage layer exposes until the Backend
// interface lands; the storage issue replaces StorageHandle with storage::Backend and
// this parser with the full URI grammar. Today only `rocksdb:PATH` is accepted.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::storage {

// An open store. Destroying it closes the store and releases its lock.
class StorageHandle {
 public:
  virtual ~StorageHandle() = default;
  // A printable description for logs, e.g. "rocksdb:./dorm-data".
  virtual std::string describe() const = 0;
};

// Opens (creating if missing) the store named by `uri`.
// Errors: invalid_argument for an unknown scheme or an empty path; busy when another
// process holds the store's lock; io_error for any other failure to open.
Result<std::unique_ptr<StorageHandle>> open_storage(std::string_view uri);

}  // namespace dorm::storage
