// Every backend dorm ships passes the conformance kit.
#include <doctest/doctest.h>

#include "dorm/storage/conformance.hpp"
#include "dorm/storage/lease_conformance.hpp"
#include "dorm/storage/faulty_backend.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/open.hpp"

using dorm::Result;
using dorm::storage::Backend;
using dorm::storage::conformance::Factory;

namespace {

Factory from_uri(std::string scheme, std::string file, std::string query = "") {
  return Factory{[=](const std::string& dir) -> Result<std::unique_ptr<Backend>> {
    return dorm::storage::open_backend(scheme + ":" + dir + "/" + file + query);
  }};
}

Factory memory() {
  return Factory{[](const std::string&) -> Result<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<dorm::storage::MemoryBackend>());
  }};
}

// FaultyBackend with no faults armed must be indistinguishable from what it wraps.
Factory faulty_over_rocksdb() {
  return Factory{[](const std::string& dir) -> Result<std::unique_ptr<Backend>> {
    auto inner = dorm::storage::open_backend("rocksdb:" + dir + "/db");
    if (!inner) return std::move(inner).error();
    return std::unique_ptr<Backend>(
        std::make_unique<dorm::storage::FaultyBackend>(std::move(inner).value()));
  }};
}

}  // namespace

DORM_BACKEND_CONFORMANCE("rocksdb", from_uri("rocksdb", "db"))
DORM_BACKEND_CONFORMANCE("rocksdb fsync", from_uri("rocksdb", "db", "?durability=fsync"))
DORM_BACKEND_CONFORMANCE("sqlite", from_uri("sqlite", "db.sqlite"))
DORM_BACKEND_CONFORMANCE("sqlite fsync", from_uri("sqlite", "db.sqlite", "?durability=fsync"))
DORM_VOLATILE_BACKEND_CONFORMANCE("memory", memory())
DORM_BACKEND_CONFORMANCE("faulty(rocksdb)", faulty_over_rocksdb())

// Nodes of one process sharing a memory: store, as runtimes of a scale-out test do.
DORM_LEASE_CONFORMANCE("memory", memory(), false)

TEST_CASE("stores one process owns have no leases and refuse leased commits") {
  dorm::storage::conformance::ScratchDir dir;
  for (const char* scheme : {"rocksdb", "sqlite"}) {
    auto store = dorm::storage::open_backend(std::string(scheme) + ":" + dir.path() + "/" + scheme);
    REQUIRE(store.ok());
    CHECK((*store)->leases() == nullptr);
    dorm::storage::WriteBatch w;
    w.put("k", "v");
    auto refused = (*store)->commit_leased(w, "obj", 1);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == dorm::ErrorCode::not_supported);
    CHECK_FALSE((*store)->get("k")->has_value());
  }
}
