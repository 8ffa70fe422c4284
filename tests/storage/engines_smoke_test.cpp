// The storage engines we build on, used directly: open in a temporary folder, write,
// close, reopen, read. These fail if a package is missing or misconfigured.
#include <doctest/doctest.h>
#include <rocksdb/db.h>
#include <sqlite3.h>

#include <memory>
#include <string>

#include "temp_dir.hpp"

using dorm::testing::TempDir;

TEST_CASE("rocksdb: a write survives close and reopen") {
  const std::string kKey("key\x00\xff", 5);  // binary bytes are part of the key
  TempDir dir;
  std::string path = dir / "db";
  rocksdb::Options options;
  options.create_if_missing = true;
  {
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(options, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    REQUIRE(db->Put(rocksdb::WriteOptions(), kKey, "value").ok());
  }
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(options, path, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string value;
  REQUIRE(db->Get(rocksdb::ReadOptions(), kKey, &value).ok());
  CHECK(value == "value");
  CHECK(db->Get(rocksdb::ReadOptions(), "key", &value).IsNotFound());
}

TEST_CASE("sqlite: a write survives close and reopen") {
  TempDir dir;
  std::string path = dir / "db.sqlite";
  auto exec = [](sqlite3* db, const char* sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    std::string message = err ? err : "";
    sqlite3_free(err);
    INFO(message);
    REQUIRE(rc == SQLITE_OK);
  };
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    exec(db, "PRAGMA journal_mode=WAL");
    exec(db, "CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID");
    exec(db, "INSERT INTO kv VALUES (x'00ff', 'value')");
    REQUIRE(sqlite3_close(db) == SQLITE_OK);
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT v FROM kv WHERE k = x'00ff'", -1, &stmt, nullptr) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  std::string value(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  CHECK(value == "value");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}
