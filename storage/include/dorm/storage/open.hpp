// Opening the store a storage URI names.
#pragma once

#include <memory>
#include <string_view>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/storage_uri.hpp"

namespace dorm::storage {

// Opens the store named by `uri` (see storage_uri.hpp), read_write (creating it if
// missing) or read_only (see OpenMode).
// Errors: invalid_argument for a malformed URI, and for a read_only `memory:` (a memory
// store starts empty and belongs to one process: there is nothing to look at); busy when
// another process holds the store's lock (read_write only); not_found for a read_only
// store that does not exist; io_error when the path is unusable (not a directory, no
// permission, ...).
Result<std::unique_ptr<Backend>> open_backend(std::string_view uri,
                                              OpenMode mode = OpenMode::read_write);
Result<std::unique_ptr<Backend>> open_backend(const StorageUri& uri,
                                              OpenMode mode = OpenMode::read_write);

}  // namespace dorm::storage
