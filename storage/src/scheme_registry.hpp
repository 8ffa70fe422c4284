// The registry behind register_storage_scheme (open.hpp), as the parser and open_backend
// consult it.
#pragma once

#include <memory>
#include <string_view>

#include "dorm/storage/open.hpp"

namespace dorm::storage::detail {

// The factory registered for `name`, or null. Shared, so it is called outside the lock
// (a factory may take a while: it opens a store).
std::shared_ptr<const StorageSchemeFactory> find_storage_scheme(std::string_view name);

}  // namespace dorm::storage::detail
