// Acknowledged commits survive SIGKILL, and every batch is all or nothing: the crash
// loop of crash_loop.hpp over each file-backed store.
#include <doctest/doctest.h>

#include "crash_loop.hpp"
#include "temp_dir.hpp"

using dorm::testing::crash::crash_loop;

TEST_CASE("crash: rocksdb keeps every acknowledged batch, whole, across SIGKILLs") {
  dorm::testing::TempDir dir;
  crash_loop("rocksdb:" + (dir / "db"), "rocksdb");
}

TEST_CASE("crash: sqlite keeps every acknowledged batch, whole, across SIGKILLs") {
  dorm::testing::TempDir dir;
  crash_loop("sqlite:" + (dir / "db.sqlite"), "sqlite");
}
