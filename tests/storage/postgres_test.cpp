// postgres:// against a real PostgreSQL 15 server started for this binary (pg_server.hpp):
// the conformance kit, the crash loop, the owner lock, read-only opens, durability
// settings, limits, and a server restart under an open store.
#include <doctest/doctest.h>

#include <random>

#include "crash_loop.hpp"
#include "dorm/storage/conformance.hpp"
#include "dorm/storage/lease_conformance.hpp"
#include "dorm/storage/open.hpp"
#include "dorm/storage/postgres_backend.hpp"
#include "pg_server.hpp"

using dorm::ErrorCode;
using dorm::Result;
using dorm::storage::Backend;
using dorm::storage::OpenMode;
using dorm::storage::ScanOptions;
using dorm::storage::WriteBatch;
using dorm::storage::conformance::Factory;
using dorm::testing::PgServer;
using dorm::testing::crash::crash_loop;

namespace {

PgServer& server() {
  static PgServer instance;  // stopped by PID when the binary exits
  return instance;
}

// Each store of a test gets a table of its own, named after the scratch directory the
// kit hands out, so that a close and reopen of the same directory finds the same table.
std::string table_for(const std::string& dir) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : dir) h = (h ^ c) * 1099511628211ULL;
  char name[32];
  std::snprintf(name, sizeof name, "t_%016llx", static_cast<unsigned long long>(h));
  return name;
}

int next_table = 0;
std::string fresh_table() { return "s_" + std::to_string(++next_table); }

Factory postgres(std::string query) {
  return Factory{[query](const std::string& dir) -> Result<std::unique_ptr<Backend>> {
    return dorm::storage::open_backend(server().uri() + "&table=" + table_for(dir) + query);
  }};
}

std::unique_ptr<Backend> must(Result<std::unique_ptr<Backend>> r) {
  if (!r.ok()) FAIL("open failed: " << r.error().describe());
  return std::move(r).value();
}

}  // namespace

DORM_BACKEND_CONFORMANCE("postgres", postgres(""))
DORM_BACKEND_CONFORMANCE("postgres fsync", postgres("&durability=fsync&pool=2"))
// Every open of a directory is another node's handle on the same table.
DORM_LEASE_CONFORMANCE("postgres shared", postgres("&shared=true"), true)

TEST_CASE("postgres: every acknowledged batch survives SIGKILLs of its writer, whole") {
  // Each kill ends the writer's PostgreSQL session mid-transaction or between them; the
  // next writer waits for the dead one's owner lock (lock_wait) and goes on.
  crash_loop(server().uri() + "&table=" + fresh_table(), "postgres");
}

TEST_CASE("postgres: shared nodes serve a table together and exclude a lone owner") {
  std::string base = server().uri() + "&table=" + fresh_table() + "&lock_wait=0";
  auto a = must(dorm::storage::open_backend(base + "&shared=true"));
  auto b = must(dorm::storage::open_backend(base + "&shared=true"));
  auto alone = dorm::storage::open_backend(base);
  REQUIRE_FALSE(alone.ok());
  CHECK(alone.error().code == ErrorCode::busy);
  // Both see each other's writes: one store.
  WriteBatch w;
  w.put("k", "from a");
  REQUIRE(a->commit(w).ok());
  CHECK(b->get("k").value() == std::optional<std::string>("from a"));
  a.reset();
  b.reset();
  // Once they are gone a lone owner may open it, and then no node may.
  auto owner = must(dorm::storage::open_backend(base));
  auto node = dorm::storage::open_backend(base + "&shared=true");
  REQUIRE_FALSE(node.ok());
  CHECK(node.error().code == ErrorCode::busy);
  CHECK(node.error().message.find("serves it alone") != std::string::npos);
}

TEST_CASE("postgres: one owner per table; the lock goes with the owner") {
  std::string uri = server().uri() + "&table=" + fresh_table() + "&lock_wait=0";
  auto first = must(dorm::storage::open_backend(uri));
  auto second = dorm::storage::open_backend(uri);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == ErrorCode::busy);
  CHECK(second.error().message.find("owned by another dorm process") != std::string::npos);
  CHECK(second.error().message.find("held by PostgreSQL backend pid") != std::string::npos);
  // Another table is another store.
  CHECK(dorm::storage::open_backend(server().uri() + "&table=" + fresh_table()).ok());

  // An opener that waits gets the store as soon as the owner closes it.
  std::string waiting = uri.substr(0, uri.size() - 1) + "5";
  std::thread closer([&] {
    // Closes the owner once the opener below is queued for its lock (bounded).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (server().sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") !=
               "1" &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    first.reset();
  });
  auto third = dorm::storage::open_backend(waiting);
  closer.join();
  CHECK(third.ok());
}

TEST_CASE("postgres: a read-only open creates nothing, reads the owner's commits, writes nothing") {
  std::string table = fresh_table();
  auto missing = dorm::storage::open_backend(server().uri() + "&table=" + table, OpenMode::read_only);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::not_found);

  auto owner = must(dorm::storage::open_backend(server().uri() + "&table=" + table));
  auto reader = must(dorm::storage::open_backend(server().uri() + "&table=" + table,
                                                 OpenMode::read_only));
  WriteBatch batch;
  batch.put("a", "1");
  REQUIRE(owner->commit(batch).ok());
  CHECK(**reader->get("a") == "1");
  auto refused = reader->commit(batch);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::read_only);
  // The owner still owns it: a reader took no lock.
  auto second_owner =
      dorm::storage::open_backend(server().uri() + "&table=" + table + "&lock_wait=0");
  CHECK_FALSE(second_owner.ok());
}

TEST_CASE("postgres: durability=fsync sets synchronous_commit and needs a server with fsync on") {
  std::string table = fresh_table();
  {
    auto opened = dorm::storage::PostgresBackend::open(
        *dorm::storage::PostgresBackend::settings_from(*dorm::storage::parse_storage_uri(
            server().uri() + "&table=" + table + "&durability=fsync")));
    REQUIRE(opened.ok());
    CHECK(*(*opened)->synchronous_commit() == "on");
  }
  // What the operator configures: per role here, which a new session reads at its start.
  server().sql("ALTER ROLE dorm SET synchronous_commit = off");
  auto process = dorm::storage::PostgresBackend::open(*dorm::storage::PostgresBackend::settings_from(
      *dorm::storage::parse_storage_uri(server().uri() + "&table=" + table)));
  server().sql("ALTER ROLE dorm RESET synchronous_commit");
  // fsync is server-wide: a reload the postmaster applies in its own time, so wait for it.
  auto set_fsync = [](const char* value) {
    server().sql(std::string("ALTER SYSTEM SET fsync = ") + value);
    server().sql("SELECT pg_reload_conf()");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (server().sql("SHOW fsync") != value && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(server().sql("SHOW fsync") == value);
  };
  set_fsync("off");
  auto fsync = dorm::storage::open_backend(server().uri() + "&table=" + table + "&durability=fsync");
  set_fsync("on");
  REQUIRE(process.ok());
  CHECK(*(*process)->synchronous_commit() == "off");
  process->reset();
  REQUIRE_FALSE(fsync.ok());
  CHECK(fsync.error().code == ErrorCode::invalid_argument);
  CHECK(fsync.error().message.find("fsync = on") != std::string::npos);
}

TEST_CASE("postgres: a key too long for the index fails the whole batch with limit_exceeded") {
  auto b = must(dorm::storage::open_backend(server().uri() + "&table=" + fresh_table()));
  std::mt19937 rng(7);
  std::string huge(10'000, '\0');
  for (auto& c : huge) c = static_cast<char>(rng());  // incompressible
  WriteBatch batch;
  batch.put("small", "1");
  batch.put(huge, "2");
  auto r = b->commit(batch);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::limit_exceeded);
  CHECK_FALSE(b->get("small")->has_value());  // nothing of it applied
  WriteBatch fine;
  fine.put("small", "1");
  CHECK(b->commit(fine).ok());  // the connection is usable afterwards
}

TEST_CASE("postgres: an open store survives a restart of the server, and keeps it its own") {
  std::string uri = server().uri() + "&table=" + fresh_table() + "&lock_wait=0";
  auto b = must(dorm::storage::open_backend(uri + "&pool=2"));
  WriteBatch batch;
  batch.put("before", "1");
  REQUIRE(b->commit(batch).ok());
  server().stop();
  // While the server is down: a clear error, no crash.
  auto down = b->get("before");
  REQUIRE_FALSE(down.ok());
  CHECK(down.error().code == ErrorCode::unavailable);
  server().start();
  // Pooled connections broke with the server; reads retry on a fresh one.
  auto again = b->get("before");
  REQUIRE(again.ok());
  CHECK(**again == "1");
  WriteBatch after;
  after.put("after", "2");
  // The broken connection the read met emptied the pool: the commit gets a fresh one.
  auto committed = b->commit(after);
  REQUIRE(committed.ok());
  auto rows = b->scan(ScanOptions::with_prefix(""));
  REQUIRE(rows.ok());
  CHECK(rows->size() == 2);
  // The restart ended the owner's lock session; the store took its lock back.
  auto second = dorm::storage::open_backend(uri);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == ErrorCode::busy);
}

TEST_CASE("postgres: an owner whose lock went with a restart, and who was taken over, is fenced") {
  std::string uri = server().uri() + "&table=" + fresh_table() + "&lock_wait=0";
  auto a = must(dorm::storage::open_backend(uri + "&pool=1"));
  WriteBatch first;
  first.put("k", "a");
  REQUIRE(a->commit(first).ok());
  server().stop();
  server().start();
  // A's sessions died with the server; B opens the store first.
  auto b = must(dorm::storage::open_backend(uri));
  WriteBatch from_b;
  from_b.put("k", "b");
  REQUIRE(b->commit(from_b).ok());

  WriteBatch from_a;
  from_a.put("k", "a again");
  auto refused = a->commit(from_a);
  if (!refused.ok() && refused.error().code == ErrorCode::unavailable) {
    refused = a->commit(from_a);  // the broken pooled connection is reported once
  }
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::fenced);
  CHECK(refused.error().message.find("lost its ownership") != std::string::npos);
  CHECK(**b->get("k") == "b");
  // Fenced for good: even once B has gone (and its lock with it), A's token is stale.
  b.reset();
  auto still = a->get("k");
  REQUIRE_FALSE(still.ok());
  CHECK(still.error().code == ErrorCode::fenced);
  // A new owner opens it as usual.
  auto c = must(dorm::storage::open_backend(uri));
  CHECK(**c->get("k") == "b");
}
