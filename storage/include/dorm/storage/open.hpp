// Opening the store a storage URI names.
#pragma once

#include <memory>
#include <string_view>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/storage_uri.hpp"

namespace dorm::storage {

// Opens (creating if missing) the store named by `uri` (see storage_uri.hpp).
// Errors: invalid_argument for a malformed URI; busy when another process holds the
// store's lock; io_error when the path is unusable (not a directory, no permission, ...).
Result<std::unique_ptr<Backend>> open_backend(std::string_view uri);
Result<std::unique_ptr<Backend>> open_backend(const StorageUri& uri);

}  // namespace dorm::storage
