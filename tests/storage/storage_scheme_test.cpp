// register_storage_scheme: a program's own backend behind a URI scheme of its own. The
// registry is process-wide, so every case registers names of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dorm/storage/backup.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/open.hpp"
#include "temp_dir.hpp"

using dorm::ErrorCode;
using dorm::Result;
using dorm::storage::Backend;
using dorm::storage::Durability;
using dorm::storage::open_backend;
using dorm::storage::OpenMode;
using dorm::storage::parse_storage_uri;
using dorm::storage::register_storage_scheme;
using dorm::storage::registered_storage_schemes;
using dorm::storage::Scheme;
using dorm::storage::StorageUri;

namespace {

// What a factory was asked to open.
struct Opened {
  std::mutex mutex;
  std::vector<std::pair<StorageUri, OpenMode>> calls;
};

// A factory that records its calls and opens a memory store.
dorm::storage::StorageSchemeFactory recording(Opened& opened) {
  return [&opened](const StorageUri& uri, OpenMode mode) -> Result<std::unique_ptr<Backend>> {
    std::lock_guard lock(opened.mutex);
    opened.calls.emplace_back(uri, mode);
    return std::unique_ptr<Backend>(std::make_unique<dorm::storage::MemoryBackend>(uri.durability));
  };
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE(
    "storage scheme: a registered scheme opens through its factory, with path, durability and "
    "options") {
  Opened opened;
  REQUIRE(register_storage_scheme("test-log", recording(opened)).ok());
  CHECK(contains(registered_storage_schemes(), "test-log"));

  auto store = open_backend("test-log:/var/app/log?durability=fsync&segment=4MiB&mode=");
  REQUIRE(store.ok());
  // The store it returned is the one served: a write lands and reads back.
  dorm::storage::WriteBatch batch;
  batch.put("k", "v");
  REQUIRE((*store)->commit(batch).ok());
  CHECK((*store)->get("k").value() == std::optional<std::string>("v"));
  CHECK((*store)->durability() == Durability::fsync);

  REQUIRE(opened.calls.size() == 1);
  const auto& [uri, mode] = opened.calls[0];
  CHECK(uri.scheme == Scheme::registered);
  CHECK(uri.registered_scheme == "test-log");
  CHECK(uri.scheme_name() == "test-log");
  CHECK(uri.path == "/var/app/log");
  CHECK(uri.durability == Durability::fsync);
  using Option = std::pair<std::string, std::string>;
  CHECK(uri.options == std::vector<Option>{{"segment", "4MiB"}, {"mode", ""}});
  CHECK(mode == OpenMode::read_write);

  // read_only reaches the factory too; a path may be empty (the factory decides).
  REQUIRE(open_backend("test-log:", OpenMode::read_only).ok());
  REQUIRE(opened.calls.size() == 2);
  CHECK(opened.calls[1].first.path.empty());
  CHECK(opened.calls[1].second == OpenMode::read_only);
}

TEST_CASE("storage scheme: a registered URI prints to a canonical form that parses back") {
  Opened opened;
  REQUIRE(register_storage_scheme("test-print", recording(opened)).ok());
  for (const char* text : {"test-print:", "test-print:/a b", "test-print:x?durability=fsync",
                           "test-print:x?b=2&a=1", "test-print:x?durability=fsync&q=a?b"}) {
    CAPTURE(text);
    auto r = parse_storage_uri(text);
    REQUIRE(r.ok());
    CHECK(r->to_string() == text);
    CHECK(*parse_storage_uri(r->to_string()) == *r);
  }
  // durability goes first, the scheme's own options keep their order.
  CHECK(parse_storage_uri("test-print:x?b=2&durability=fsync")->to_string() ==
        "test-print:x?durability=fsync&b=2");
  // Parsing never opens anything.
  CHECK(opened.calls.empty());
}

TEST_CASE(
    "storage scheme: malformed URIs of a registered scheme are refused before its factory runs") {
  Opened opened;
  REQUIRE(register_storage_scheme("test-strict", recording(opened)).ok());
  for (const char* text :
       {"test-strict:x?", "test-strict:x?a", "test-strict:x?=1", "test-strict:x?a=1&a=2",
        "test-strict:x?durability=always", "test-strict:a\nb", "test-strict:x?a=\x01"}) {
    CAPTURE(text);
    auto r = open_backend(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(r.error().message.find("invalid storage URI") == 0);
  }
  CHECK(opened.calls.empty());
}

TEST_CASE("storage scheme: an unknown scheme's error names the registered ones") {
  Opened opened;
  REQUIRE(register_storage_scheme("test-named", recording(opened)).ok());
  auto r = parse_storage_uri("test-unnamed:x");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::invalid_argument);
  CHECK(r.error().message.find("unknown scheme 'test-unnamed'") != std::string::npos);
  CHECK(r.error().message.find("rocksdb, sqlite, memory") != std::string::npos);
  CHECK(r.error().message.find("test-named") != std::string::npos);
}

TEST_CASE("storage scheme: bad names, built-in names and a second registration are refused") {
  Opened first;
  Opened second;
  REQUIRE(register_storage_scheme("test-once", recording(first)).ok());
  auto again = register_storage_scheme("test-once", recording(second));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == ErrorCode::invalid_argument);
  CHECK(again.error().message == "storage scheme 'test-once' is registered already");
  // The first registration stays in force.
  REQUIRE(open_backend("test-once:x").ok());
  CHECK(first.calls.size() == 1);
  CHECK(second.calls.empty());

  for (const char* name : {"rocksdb", "sqlite", "memory"}) {
    CAPTURE(name);
    auto r = register_storage_scheme(name, recording(second));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(r.error().message.find("is built in") != std::string::npos);
  }
  // The built-in schemes still open their own backends.
  dorm::testing::TempDir dir;
  auto rocks = open_backend("rocksdb:" + (dir / "r"));
  REQUIRE(rocks.ok());
  CHECK((*rocks)->describe() == "rocksdb:" + (dir / "r"));
  REQUIRE(open_backend("memory:").ok());
  CHECK(second.calls.empty());

  struct Case {
    std::string name;
    const char* reason;
  };
  for (const Case& c :
       {Case{"", "1-32 characters"}, Case{std::string(33, 'a'), "1-32 characters"},
        Case{"Upper", "lower-case letter"}, Case{"1st", "lower-case letter"},
        Case{"-x", "lower-case letter"}, Case{"a:b", "may hold only"}, Case{"a/b", "may hold only"},
        Case{"a b", "may hold only"}, Case{"tEst", "may hold only"}}) {
    CAPTURE(c.name);
    auto r = register_storage_scheme(c.name, recording(second));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(r.error().message.find(c.reason) != std::string::npos);
    CHECK_FALSE(contains(registered_storage_schemes(), c.name));
  }
  auto no_factory = register_storage_scheme("test-nofactory", {});
  REQUIRE_FALSE(no_factory.ok());
  CHECK(no_factory.error().message.find("needs a factory") != std::string::npos);
  CHECK_FALSE(contains(registered_storage_schemes(), "test-nofactory"));
  CHECK_FALSE(parse_storage_uri("test-nofactory:x").ok());
  // The longest name allowed, and every character a scheme may hold.
  CHECK(register_storage_scheme(std::string(32, 'z'), recording(second)).ok());
  CHECK(register_storage_scheme("test+a-b.c9", recording(second)).ok());
}

TEST_CASE(
    "storage scheme: the factory's error is open_backend's, and no backend is an internal error") {
  REQUIRE(register_storage_scheme("test-locked", [](const StorageUri& uri, OpenMode) {
            return Result<std::unique_ptr<Backend>>(
                dorm::Error{ErrorCode::busy, "'" + uri.path + "' is held by another process"});
          }).ok());
  auto busy = open_backend("test-locked:/data");
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error().code == ErrorCode::busy);
  CHECK(busy.error().message == "'/data' is held by another process");

  REQUIRE(register_storage_scheme("test-null", [](const StorageUri&, OpenMode) {
            return Result<std::unique_ptr<Backend>>(std::unique_ptr<Backend>());
          }).ok());
  auto null = open_backend("test-null:x");
  REQUIRE_FALSE(null.ok());
  CHECK(null.error().code == ErrorCode::internal);
  CHECK(null.error().message.find("test-null") != std::string::npos);
}

TEST_CASE("storage scheme: registering and opening from many threads at once") {
  constexpr int kThreads = 8;
  Opened opened;
  std::atomic<int> won{0};
  std::atomic<int> opens_ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread races for the same name and registers one of its own.
      if (register_storage_scheme("test-race", recording(opened)).ok()) ++won;
      CHECK(register_storage_scheme("test-own" + std::to_string(t), recording(opened)).ok());
      for (int i = 0; i < 20; ++i) {
        if (open_backend("test-own" + std::to_string((t + i) % kThreads) + ":x").ok()) ++opens_ok;
        if (open_backend("test-race:y").ok()) ++opens_ok;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(won.load() == 1);
  auto names = registered_storage_schemes();
  for (int t = 0; t < kThreads; ++t) CHECK(contains(names, "test-own" + std::to_string(t)));
  CHECK(std::is_sorted(names.begin(), names.end()));
  // A thread may try another's scheme before that thread registered it; every open of a
  // registered scheme reached the factory.
  CHECK(opened.calls.size() == static_cast<std::size_t>(opens_ok.load()));
  CHECK(opens_ok.load() >= kThreads * 20);
}

TEST_CASE("storage scheme: dorm's backups refuse a registered scheme's store, touching nothing") {
  Opened opened;
  REQUIRE(register_storage_scheme("test-backup", recording(opened)).ok());
  dorm::testing::TempDir dir;
  auto source = parse_storage_uri("test-backup:/data");
  REQUIRE(source.ok());
  auto backup = dorm::storage::create_backup(*source, dir / "b", {});
  REQUIRE_FALSE(backup.ok());
  CHECK(backup.error().code == ErrorCode::not_supported);
  CHECK(backup.error().message.find("test-backup") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "b"));
  CHECK(opened.calls.empty());
}
