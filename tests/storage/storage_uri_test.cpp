#include "dorm/storage/storage_uri.hpp"

#include <doctest/doctest.h>

#include "dorm/storage/open.hpp"
#include "dorm/storage/postgres_backend.hpp"
#include "temp_dir.hpp"

using dorm::storage::Durability;
using dorm::storage::parse_storage_uri;
using dorm::storage::Scheme;

TEST_CASE("storage URI: the three schemes and durability") {
  auto r = parse_storage_uri("rocksdb:./dorm-data");
  REQUIRE(r.ok());
  CHECK(r->scheme == Scheme::rocksdb);
  CHECK(r->path == "./dorm-data");
  CHECK(r->durability == Durability::process);

  auto s = parse_storage_uri("sqlite:/var/lib/dorm.db?durability=fsync");
  REQUIRE(s.ok());
  CHECK(s->scheme == Scheme::sqlite);
  CHECK(s->path == "/var/lib/dorm.db");
  CHECK(s->durability == Durability::fsync);

  auto m = parse_storage_uri("memory:");
  REQUIRE(m.ok());
  CHECK(m->scheme == Scheme::memory);
  CHECK(m->path.empty());
  CHECK(parse_storage_uri("memory:?durability=process").ok());
}

TEST_CASE("storage URI: postgres takes libpq's URI, dorm's options and libpq's own") {
  auto r = parse_storage_uri(
      "postgresql://dorm@db.example:5433/app?durability=fsync&table=sessions&sslmode=require&"
      "pool=8&lock_wait=0&shared=true");
  REQUIRE(r.ok());
  CHECK(r->scheme == Scheme::postgres);
  CHECK(r->scheme_name() == "postgres");
  CHECK(r->path == "//dorm@db.example:5433/app");
  CHECK(r->durability == Durability::fsync);
  auto settings = dorm::storage::PostgresBackend::settings_from(*r);
  REQUIRE(settings.ok());
  CHECK(settings->table == "sessions");
  CHECK(settings->pool == 8);
  CHECK(settings->lock_wait == std::chrono::seconds(0));
  CHECK(settings->shared);
  // dorm's options are not libpq's: only sslmode reaches it.
  CHECK(settings->conninfo == "postgresql://dorm@db.example:5433/app?sslmode=require");
  auto defaults = dorm::storage::PostgresBackend::settings_from(*parse_storage_uri("postgres://h/db"));
  REQUIRE(defaults.ok());
  CHECK(defaults->table == "dorm_kv");
  CHECK(defaults->pool == 4);
  CHECK(defaults->lock_wait == std::chrono::seconds(10));
  CHECK(defaults->durability == Durability::process);
  CHECK_FALSE(defaults->shared);
}

TEST_CASE("storage URI: canonical form round-trips") {
  for (const char* text : {"rocksdb:./dorm-data", "rocksdb:/a b/c?durability=fsync",
                           "sqlite:x.db", "memory:",
                           "postgres://u@h:1/d?durability=fsync&table=t&connect_timeout=3"}) {
    CAPTURE(text);
    auto r = parse_storage_uri(text);
    REQUIRE(r.ok());
    CHECK(r->to_string() == text);
    CHECK(*parse_storage_uri(r->to_string()) == *r);
  }
  CHECK(parse_storage_uri("rocksdb:x?durability=process")->to_string() == "rocksdb:x");
}

TEST_CASE("storage URI: malformed input is rejected with the reason") {
  struct Case {
    const char* uri;
    const char* reason;
  };
  for (const Case& c : {
           Case{"", "expected SCHEME:PATH"},
           Case{"./dorm-data", "expected SCHEME:PATH"},
           Case{"mysql://db", "unknown scheme 'mysql'"},
           Case{"postgres:", "needs a server and database"},
           Case{"postgres:db", "postgres://[USER@]HOST[:PORT]/DATABASE"},
           Case{"postgres://h/db?table=Kv", "table must be a lower-case SQL identifier"},
           Case{"postgres://h/db?table=1kv", "table must be a lower-case SQL identifier"},
           Case{"postgres://h/db?table=kv;drop", "table must be a lower-case SQL identifier"},
           Case{"postgres://h/db?pool=0", "pool must be a whole number from 1 to 64"},
           Case{"postgres://h/db?pool=65", "pool must be a whole number from 1 to 64"},
           Case{"postgres://h/db?lock_wait=-1", "lock_wait must be a whole number from 0"},
           Case{"postgres://h/db?shared=yes", "shared must be true or false, not 'yes'"},
           Case{"postgres://h/db?bogus=1", "invalid URI query parameter: \"bogus\""},
           Case{"postgres://h/db?reserve=1GiB", "invalid URI query parameter: \"reserve\""},
           Case{"ROCKSDB:x", "unknown scheme 'ROCKSDB'"},
           Case{"rocksdb:", "needs a path"},
           Case{"sqlite:?durability=fsync", "needs a path"},
           Case{"memory:/tmp/x", "memory: takes no path"},
           Case{"rocksdb:x?", "empty option"},
           Case{"rocksdb:x?durability=fsync&", "empty option"},
           Case{"rocksdb:x?durability", "has no '=value'"},
           Case{"rocksdb:x?durability=always", "durability must be process or fsync"},
           Case{"rocksdb:x?durability=fsync&durability=process", "given twice"},
           Case{"rocksdb:x?cache=1", "unknown option 'cache'"},
           Case{"rocksdb:a\nb", "control character"},
       }) {
    std::string uri = c.uri;
    std::string reason = c.reason;
    CAPTURE(uri);
    auto r = parse_storage_uri(uri);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == dorm::ErrorCode::invalid_argument);
    CHECK(r.error().message.find("invalid storage URI '" + std::string(uri) + "'") == 0);
    CHECK(r.error().message.find(reason) != std::string::npos);
  }
}

TEST_CASE("open_backend opens each scheme and reports bad URIs without touching disk") {
  dorm::testing::TempDir dir;
  for (std::string uri : {"rocksdb:" + (dir / "r"), "sqlite:" + (dir / "s.db"), std::string("memory:")}) {
    CAPTURE(uri);
    auto b = dorm::storage::open_backend(uri);
    REQUIRE(b.ok());
    CHECK((*b)->describe() == uri);
  }
  auto bad = dorm::storage::open_backend("rocksdb:" + (dir / "never") + "?bogus=1");
  REQUIRE_FALSE(bad.ok());
  CHECK_FALSE(std::filesystem::exists(dir / "never"));
}
