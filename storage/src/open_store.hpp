// Internal to the storage layer: opening a store without open_backend's check for an
// interrupted restore, which restore_backup needs in order to finish one.
#pragma once

#include <memory>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/storage_uri.hpp"

namespace dorm::storage::detail {

Result<std::unique_ptr<Backend>> open_store(const StorageUri& uri, OpenMode mode);

}  // namespace dorm::storage::detail
