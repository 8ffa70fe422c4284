// Read-only opens (OpenMode::read_only), for both file backends: they create nothing,
// refuse writes, take no lock (so they work beside an owner, in this process or another,
// and never stop an owner from opening), and see what the owner acknowledged before.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "dorm/storage/open.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/sqlite_backend.hpp"
#include "temp_dir.hpp"

extern char** environ;

using dorm::ErrorCode;
using dorm::storage::Backend;
using dorm::storage::OpenMode;
using dorm::storage::ScanOptions;
using dorm::storage::WriteBatch;
using dorm::testing::TempDir;

namespace {

struct Scheme {
  std::string name;
  std::string file;
};
const Scheme kSchemes[] = {{"rocksdb", "db"}, {"sqlite", "db.sqlite"}};

std::unique_ptr<Backend> must_open(const std::string& uri, OpenMode mode) {
  auto b = dorm::storage::open_backend(uri, mode);
  REQUIRE_MESSAGE(b.ok(), (b.ok() ? "" : b.error().describe()));
  return std::move(b).value();
}

void put(Backend& b, const std::string& key, const std::string& value) {
  WriteBatch batch;
  batch.put(key, value);
  auto ok = b.commit(batch);
  REQUIRE_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.error().describe()));
}

std::optional<std::string> get(Backend& b, const std::string& key) {
  auto v = b.get(key);
  REQUIRE_MESSAGE(v.ok(), (v.ok() ? "" : v.error().describe()));
  return *v;
}

std::set<std::string> listing(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

}  // namespace

TEST_CASE("read-only: a missing store is not_found, and nothing is created") {
  TempDir dir;
  for (const auto& s : kSchemes) {
    CAPTURE(s.name);
    std::string path = dir / ("missing-" + s.file);
    auto b = dorm::storage::open_backend(s.name + ":" + path, OpenMode::read_only);
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().code == ErrorCode::not_found);
    CHECK(b.error().message.find("no " + s.name + " store at '" + path + "'") != std::string::npos);
  }
  // Not the directory, not a lock file, not a WAL.
  CHECK(listing(dir.path()).empty());
}

TEST_CASE("read-only: memory: is refused with the reason") {
  auto b = dorm::storage::open_backend("memory:", OpenMode::read_only);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == ErrorCode::invalid_argument);
  CHECK(b.error().message.find("cannot be opened read-only") != std::string::npos);
}

TEST_CASE("read-only: beside an open owner it reads, refuses writes, and the owner goes on") {
  TempDir dir;
  for (const auto& s : kSchemes) {
    CAPTURE(s.name);
    std::string uri = s.name + ":" + (dir / s.file);
    auto owner = must_open(uri, OpenMode::read_write);
    put(*owner, "a", "1");
    if (s.name == "rocksdb") {
      // "a" in a table file, "b" only in the WAL and the owner's memtable: both are seen.
      auto& rocks = static_cast<dorm::storage::RocksDbBackend&>(*owner);
      REQUIRE(rocks.db().Flush(rocksdb::FlushOptions()).ok());
    }
    put(*owner, "b", "2");
    std::set<std::string> files_before = listing(dir.path());

    auto reader = must_open(uri, OpenMode::read_only);
    CHECK(get(*reader, "a") == "1");
    CHECK(get(*reader, "b") == "2");
    auto rows = reader->scan(ScanOptions{});
    REQUIRE(rows.ok());
    CHECK(rows->size() == 2);

    WriteBatch write;
    write.put("c", "3");
    auto refused = reader->commit(write);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::read_only);
    CHECK(refused.error().message.find("opened read-only") != std::string::npos);
    CHECK(reader->commit(WriteBatch{}).error().code == ErrorCode::read_only);
    CHECK_FALSE(get(*owner, "c"));

    // The owner is not held up by the reader.
    put(*owner, "d", "4");
    if (s.name == "sqlite") {
      CHECK(get(*reader, "d") == "4");  // each read sees the latest commit
    }
    reader.reset();
    // The reader left no file behind and renamed none (RocksDB's info LOG included).
    std::set<std::string> files_after = listing(dir.path());
    CHECK(files_after == files_before);
    CHECK(get(*owner, "b") == "2");
    CHECK(get(*owner, "d") == "4");
  }
}

TEST_CASE("read-only: a reader takes no lock, so an owner can open while it reads") {
  TempDir dir;
  for (const auto& s : kSchemes) {
    CAPTURE(s.name);
    std::string uri = s.name + ":" + (dir / s.file);
    put(*must_open(uri, OpenMode::read_write), "k", "v");
    auto reader = must_open(uri, OpenMode::read_only);
    auto second_reader = must_open(uri, OpenMode::read_only);
    auto owner = must_open(uri, OpenMode::read_write);
    put(*owner, "k", "w");
    CHECK(get(*second_reader, "k") == (s.name == "sqlite" ? "w" : "v"));
    CHECK(get(*reader, "k").has_value());
  }
}

TEST_CASE("read-only: a sqlite file that is not a dorm store is an error naming it") {
  TempDir dir;
  std::string empty = dir / "empty";  // SQLite takes an empty file for an empty database
  { std::ofstream(empty) << ""; }
  auto b = dorm::storage::open_backend("sqlite:" + empty, OpenMode::read_only);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find(empty) != std::string::npos);
  CHECK(b.error().message.find("no such table: kv") != std::string::npos);
  CHECK(std::filesystem::file_size(empty) == 0);
}

namespace {

// crash_writer (see crash_test.cpp) as a running owner in another process: it commits
// 1,000-key batches and prints `ack N` after each.
class Writer {
 public:
  explicit Writer(const std::string& uri) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    // A short pause after each commit keeps the store small enough to open many
    // times in a test (unpaused, ~1 GB a minute under ASan).
    const char* argv[] = {DORM_CRASH_WRITER, uri.c_str(), "1", "10", nullptr};
    int rc =
        posix_spawn(&pid_, DORM_CRASH_WRITER, &actions, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    REQUIRE(rc == 0);
    fd_ = out[0];
    reader_ = std::thread([this] { read_lines(); });
  }
  ~Writer() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    reader_.join();
    close(fd_);
  }

  std::set<long> acked() {
    std::lock_guard lock(mutex_);
    return acked_;
  }

  // Waits (at most 60 s) until at least `n` batches are acknowledged.
  bool wait_acks(std::size_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (acked().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  void read_lines() {
    std::string pending;
    char buf[4096];
    for (;;) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return;
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        if (line.starts_with("ack ")) {
          std::lock_guard lock(mutex_);
          acked_.insert(std::stol(line.substr(4)));
        }
      }
    }
  }

  pid_t pid_ = 0;
  int fd_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::set<long> acked_;
};

}  // namespace

TEST_CASE(
    "read-only: while another process commits, each open sees every acknowledged batch, whole") {
  TempDir dir;
  for (const auto& s : kSchemes) {
    CAPTURE(s.name);
    std::string uri = s.name + ":" + (dir / s.file);
    Writer writer(uri);
    REQUIRE(writer.wait_acks(3));
    constexpr int kOpens = 8;
    for (int round = 0; round < kOpens; ++round) {
      CAPTURE(round);
      std::set<long> acked_before = writer.acked();
      auto reader = must_open(uri, OpenMode::read_only);
      // The newest batches are the ones still in the WAL the writer is appending to: look
      // at those (the store grows by ~100 KiB per batch, too much to scan every round).
      long from = std::max(1L, *acked_before.rbegin() - 20);
      char start[32];
      std::snprintf(start, sizeof start, "batch/%010ld/", from);
      ScanOptions tail = ScanOptions::with_prefix("batch/");
      tail.start = start;
      auto rows = reader->scan(tail);
      REQUIRE_MESSAGE(rows.ok(), (rows.ok() ? "" : rows.error().describe()));
      std::map<long, int> keys_per_batch;
      for (const auto& kv : *rows) keys_per_batch[std::stol(kv.key.substr(6, 10))]++;
      int partial = 0;
      for (const auto& entry : keys_per_batch) {
        if (entry.second != 1000) ++partial;  // all or nothing, even mid-append
      }
      CHECK(partial == 0);
      int missing = 0;
      for (long batch = from; batch <= *acked_before.rbegin(); ++batch) {
        if (!keys_per_batch.contains(batch)) ++missing;
      }
      CHECK(missing == 0);
      CHECK(get(*reader, "batch/0000000001/0000") == std::string(100, 'x'));
    }
    // The owner kept committing all along.
    std::size_t acks = writer.acked().size();
    CHECK(writer.wait_acks(acks + 3));
  }
}

TEST_CASE("read-only: with no owner running, the store's files are left as they were") {
  TempDir dir;
  for (const auto& s : kSchemes) {
    CAPTURE(s.name);
    std::string path = dir / s.file;
    std::string uri = s.name + ":" + path;
    put(*must_open(uri, OpenMode::read_write), "k", "v");  // opened, written, closed
    auto snapshot = [&] {
      std::map<std::string, std::pair<std::uintmax_t, std::filesystem::file_time_type>> out;
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
        if (e.is_regular_file()) out[e.path().string()] = {e.file_size(), e.last_write_time()};
      }
      return out;
    };
    auto before = snapshot();
    {
      auto reader = must_open(uri, OpenMode::read_only);
      CHECK(get(*reader, "k") == "v");
    }
    auto after = snapshot();
    for (const auto& [file, stat] : before) {
      CAPTURE(file);
      CHECK(after.contains(file));
      CHECK(after[file] == stat);
    }
    for (const auto& [file, stat] : after) {
      if (before.contains(file)) continue;
      // The one thing a reader may leave: SQLite's WAL-mode reader files, when the owner
      // removed them at its close. The WAL stays empty.
      CAPTURE(file);
      CHECK(s.name == "sqlite");
      CHECK((file == path + "-shm" || file == path + "-wal"));
      if (file == path + "-wal") CHECK(stat.first == 0);
    }
  }
}
