// Opening the store a storage URI names, and the schemes a program adds to the three
// built in ones.
//
// A program with a backend of its own (docs/custom-backend.md) registers a scheme for it
// once, at start-up, before anything opens a URI; from then on `open_backend("NAME:…")`,
// and with it `dorm::server::Server`'s `storage` option, opens that backend like any
// other:
//
//   dorm::storage::register_storage_scheme("applog",
//       [](const StorageUri& uri, OpenMode mode) -> Result<std::unique_ptr<Backend>> {
//         ...open uri.path with uri.durability...
//       });
//   auto store = dorm::storage::open_backend("applog:/var/lib/app/log");
//
// The registry is process-wide and thread-safe. A scheme stays registered until the
// process exits: a URI names the same kind of store for the whole life of a program.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"
#include "dorm/storage/storage_uri.hpp"

namespace dorm::storage {

// Opens the store named by `uri` (see storage_uri.hpp), read_write (creating it if
// missing) or read_only (see OpenMode). A registered scheme's factory opens it.
// Errors: invalid_argument for a malformed URI, an unknown scheme, and for a read_only
// `memory:` (a memory store starts empty and belongs to one process: there is nothing to
// look at); busy when another process holds the store's lock (read_write only); not_found
// for a read_only store that does not exist; io_error when the path is unusable (not a
// directory, no permission, ...); for a registered scheme, whatever its factory returns.
Result<std::unique_ptr<Backend>> open_backend(std::string_view uri,
                                              OpenMode mode = OpenMode::read_write);
Result<std::unique_ptr<Backend>> open_backend(const StorageUri& uri,
                                              OpenMode mode = OpenMode::read_write);

// Opens the store a URI of a registered scheme names. `uri.scheme` is Scheme::registered,
// `uri.path` the text between the colon and the `?` (possibly empty), `uri.durability`
// the durability asked for, and `uri.options` every other option as written: the factory
// refuses (invalid_argument, naming it) what it does not understand, an empty path if it
// needs one, and a durability or OpenMode it cannot keep. It keeps the Backend contract
// (backend.hpp), one owner included: refuse a second opener with busy, so `dorm serve`'s
// lock wait works for it too. Called on any thread, possibly on several at once.
using StorageSchemeFactory =
    std::function<Result<std::unique_ptr<Backend>>(const StorageUri& uri, OpenMode mode)>;

// Adds the scheme `name`, so URIs `name:…` open through `factory`.
// Errors (invalid_argument, naming the scheme, nothing registered): a name that is not
// 1-32 of a lower-case letter followed by lower-case letters, digits, `+`, `-` or `.`
// (what a URI scheme may be, in one case); a built-in scheme (rocksdb, sqlite, memory);
// a name registered already; an empty factory. Thread-safe.
Result<void> register_storage_scheme(std::string_view name, StorageSchemeFactory factory);

// The registered schemes' names, sorted. Thread-safe.
std::vector<std::string> registered_storage_schemes();

}  // namespace dorm::storage
