#include "dorm/storage/fenced_backend.hpp"

#include <doctest/doctest.h>

#include "dorm/storage/memory_backend.hpp"

using dorm::ErrorCode;
using dorm::storage::FencedBackend;
using dorm::storage::MemoryBackend;
using dorm::storage::WriteBatch;

TEST_CASE("fenced backend: forwards until fenced, then refuses every call with `fenced`") {
  MemoryBackend inner;
  FencedBackend handle(inner);
  WriteBatch w;
  w.put("k", "v");
  REQUIRE(handle.commit(w).ok());
  CHECK(handle.get("k")->has_value());
  handle.fence();
  handle.fence();  // idempotent
  CHECK(handle.fenced());
  WriteBatch late;
  late.put("late", "write");
  auto r = handle.commit(late);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::fenced);
  CHECK(handle.get("k").error().code == ErrorCode::fenced);
  CHECK(handle.scan({}).error().code == ErrorCode::fenced);
  std::vector<std::string> keys{"k"};
  CHECK(handle.get_many(keys).error().code == ErrorCode::fenced);
  // A leased commit too, though its lease is still current.
  auto grant = inner.acquire("obj", "node", 0, 100);
  REQUIRE(grant.ok());
  REQUIRE(grant->granted());
  CHECK(handle.commit_leased(late, "obj", grant->token).error().code == ErrorCode::fenced);
  // The store itself is untouched and usable through a fresh handle.
  CHECK_FALSE(inner.get("late")->has_value());
  FencedBackend successor(inner);
  CHECK(successor.get("k")->has_value());
  REQUIRE(successor.leases() == &inner);
  CHECK(successor.commit_leased(late, "obj", grant->token).ok());
  CHECK(inner.get("late")->has_value());
}
