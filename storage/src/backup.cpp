#include "dorm/storage/backup.hpp"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dorm/storage/open.hpp"
#include "open_store.hpp"

namespace dorm::storage {
namespace {

namespace fs = std::filesystem;

// Entries per commit of a restore, and per page read from the backup. With values at their
// default 128 KiB limit a commit stays under 32 MiB; typical entries are far smaller.
constexpr std::size_t kRestorePageKeys = 256;

std::string join(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / std::string(name)).string();
}

std::string errno_text() {
  return std::strerror(errno);
}

// Unix milliseconds as ISO-8601 UTC, e.g. 2026-12-03T06:50:01.250Z.
std::string iso_utc(std::int64_t ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[48];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<void> fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    return Error{ErrorCode::io_error, "cannot open '" + path + "' to sync it: " + errno_text()};
  int rc = ::fsync(fd);
  std::string why = rc != 0 ? errno_text() : std::string();
  ::close(fd);
  if (rc != 0) return Error{ErrorCode::io_error, "cannot sync '" + path + "': " + why};
  return {};
}

std::string parent_of(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Writes `text` to `path` so that a crash leaves either no file or the whole of it: a
// temporary file, synced, renamed over `path`, and the directory synced.
Result<void> write_file_durably(const std::string& path, std::string_view text) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) return Error{ErrorCode::io_error, "cannot write '" + temporary + "'"};
  }
  if (auto ok = fsync_path(temporary, O_RDONLY); !ok) return ok;
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return Error{ErrorCode::io_error,
                 "cannot rename '" + temporary + "' to '" + path + "': " + errno_text()};
  }
  return fsync_path(parent_of(path), O_RDONLY | O_DIRECTORY);
}

Result<void> remove_durably(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error{ErrorCode::io_error, "cannot remove '" + path + "': " + errno_text()};
  }
  return fsync_path(parent_of(path), O_RDONLY | O_DIRECTORY);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Calls `page` with the entries of `backend` in key order, kRestorePageKeys at a time.
// Only for a store nobody writes to (a backup's copy): pages are separate reads.
template <class Page>
Result<void> for_each_page(Backend& backend, Page page) {
  ScanOptions scan;
  scan.limit = kRestorePageKeys;
  for (;;) {
    auto rows = backend.scan(scan);
    if (!rows) return std::move(rows).error();
    if (rows->empty()) return {};
    if (auto ok = page(*rows); !ok) return ok;
    if (rows->size() < kRestorePageKeys) return {};
    scan.start_after = rows->back().key;
  }
}

Result<CopyStats> count_entries(Backend& backend) {
  CopyStats stats;
  auto counted = for_each_page(backend, [&](const std::vector<KeyValue>& rows) -> Result<void> {
    for (const auto& kv : rows) {
      ++stats.keys;
      stats.bytes += kv.key.size() + kv.value.size();
    }
    return {};
  });
  if (!counted) return std::move(counted).error();
  return stats;
}

std::string describe_stats(const CopyStats& s) {
  return std::to_string(s.keys) + " keys, " + std::to_string(s.bytes) + " bytes";
}

// Deletes every entry of `store` (restore with force), in one commit when the keys allow.
Result<void> clear_store(Backend& store) {
  // One range covers every key below 0xFF; keys starting with 0xFF (dorm writes none) are
  // deleted one by one after it.
  WriteBatch range;
  range.delete_range(std::string(), std::string(1, '\xff'));
  if (auto ok = store.commit(range); !ok) return ok;
  ScanOptions high;
  high.start = std::string(1, '\xff');
  high.limit = kRestorePageKeys;
  for (;;) {
    auto rows = store.scan(high);
    if (!rows) return std::move(rows).error();
    if (rows->empty()) return {};
    WriteBatch batch;
    for (const auto& kv : *rows) batch.del(kv.key);
    if (auto ok = store.commit(batch); !ok) return ok;
  }
}

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ea;
  std::error_code eb;
  fs::path ca = fs::weakly_canonical(a, ea);
  fs::path cb = fs::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

}  // namespace

std::string BackupManifest::to_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("format");
  w.String("dorm-backup");
  w.Key("formatVersion");
  w.Int(format_version);
  w.Key("backend");
  auto kind = to_string(backend);
  w.String(kind.data(), static_cast<rapidjson::SizeType>(kind.size()));
  w.Key("store");
  w.String(kBackupStoreName.data(), static_cast<rapidjson::SizeType>(kBackupStoreName.size()));
  w.Key("source");
  w.String(source.c_str(), static_cast<rapidjson::SizeType>(source.size()));
  w.Key("createdAtMs");
  w.Int64(created_at_ms);
  w.Key("createdAt");
  w.String(iso_utc(created_at_ms).c_str());
  w.Key("dormVersion");
  w.String(dorm_version.c_str(), static_cast<rapidjson::SizeType>(dorm_version.size()));
  w.Key("keys");
  w.Uint64(contents.keys);
  w.Key("bytes");
  w.Uint64(contents.bytes);
  w.Key("generation");
  if (generation) {
    w.Uint64(*generation);
  } else {
    w.Null();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

Result<BackupManifest> BackupManifest::from_json(std::string_view json, std::string_view where) {
  auto bad = [&](const std::string& what) {
    return Error{ErrorCode::corruption,
                 "backup manifest '" + std::string(where) + "' is not valid: " + what};
  };
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return bad("not a JSON object");
  auto member = [&](const char* name) -> const rapidjson::Value* {
    auto it = doc.FindMember(name);
    return it == doc.MemberEnd() ? nullptr : &it->value;
  };
  const auto* format = member("format");
  if (!format || !format->IsString() || std::string_view(format->GetString()) != "dorm-backup") {
    return bad("\"format\" is not \"dorm-backup\"");
  }
  BackupManifest m;
  const auto* version = member("formatVersion");
  if (!version || !version->IsInt() || version->GetInt() < 1) return bad("no \"formatVersion\"");
  m.format_version = version->GetInt();
  if (m.format_version > kBackupFormatVersion) {
    return Error{ErrorCode::not_supported,
                 "backup manifest '" + std::string(where) + "' has format version " +
                     std::to_string(m.format_version) + ", newer than the " +
                     std::to_string(kBackupFormatVersion) +
                     " this dorm reads: restore it with a newer dorm"};
  }
  const auto* backend = member("backend");
  if (!backend || !backend->IsString()) return bad("no \"backend\"");
  std::string_view kind = backend->GetString();
  if (kind == "rocksdb") {
    m.backend = Scheme::rocksdb;
  } else if (kind == "sqlite") {
    m.backend = Scheme::sqlite;
  } else {
    return bad("unknown backend '" + std::string(kind) + "'");
  }
  const auto* store = member("store");
  if (!store || !store->IsString() || std::string_view(store->GetString()) != kBackupStoreName) {
    return bad("\"store\" is not \"" + std::string(kBackupStoreName) + "\"");
  }
  const auto* source = member("source");
  if (!source || !source->IsString()) return bad("no \"source\"");
  m.source = source->GetString();
  const auto* created = member("createdAtMs");
  if (!created || !created->IsInt64()) return bad("no \"createdAtMs\"");
  m.created_at_ms = created->GetInt64();
  const auto* dorm = member("dormVersion");
  if (!dorm || !dorm->IsString()) return bad("no \"dormVersion\"");
  m.dorm_version = dorm->GetString();
  const auto* keys = member("keys");
  const auto* bytes = member("bytes");
  if (!keys || !keys->IsUint64() || !bytes || !bytes->IsUint64())
    return bad("no \"keys\" or \"bytes\"");
  m.contents = {keys->GetUint64(), bytes->GetUint64()};
  const auto* generation = member("generation");
  if (generation && !generation->IsNull()) {
    if (!generation->IsUint64()) return bad("\"generation\" is not a number");
    m.generation = generation->GetUint64();
  }
  return m;
}

std::string restore_marker_path(const StorageUri& target) {
  switch (target.scheme) {
    case Scheme::rocksdb:
      return join(target.path, "DORM-RESTORE-INCOMPLETE");
    case Scheme::sqlite:
      return target.path + ".restore-incomplete";
    case Scheme::memory:
    case Scheme::postgres:
    case Scheme::registered:
      return {};
  }
  return {};
}

StorageUri backup_store_uri(const std::string& dir, const BackupManifest& manifest) {
  StorageUri uri;
  uri.scheme = manifest.backend;
  uri.path = join(dir, kBackupStoreName);
  return uri;
}

bool is_backup_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         ::stat(join(path, kBackupManifestName).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<BackupManifest> read_backup_manifest(const std::string& dir) {
  std::string path = join(dir, kBackupManifestName);
  if (!exists(path)) {
    return Error{ErrorCode::not_found, "no backup in '" + dir + "': it has no " +
                                           std::string(kBackupManifestName) +
                                           " (a backup that did not finish has none)"};
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Error{ErrorCode::io_error, "cannot read '" + path + "'"};
  return BackupManifest::from_json(text.str(), path);
}

Result<BackupManifest> create_backup(const StorageUri& source, const std::string& dir,
                                     const BackupOptions& options) {
  if (source.scheme == Scheme::memory) {
    return Error{ErrorCode::invalid_argument,
                 "memory: cannot be backed up: a memory store lives only inside the process "
                 "that made it, and `dorm backup` runs in another (back up a rocksdb: or "
                 "sqlite: store)"};
  }
  if (source.scheme == Scheme::postgres) {
    return Error{ErrorCode::not_supported,
                 "postgres: stores are backed up with PostgreSQL's own tools (pg_dump of the "
                 "store's table, or base backups with WAL archiving: docs/storage.md), not with "
                 "dorm backup"};
  }
  if (source.scheme == Scheme::registered) {
    // A backup's manifest names a built-in kind, which restore and inspect open the copy
    // as; a program's own scheme is not one of them.
    return Error{ErrorCode::not_supported,
                 source.registered_scheme +
                     ": cannot be backed up with dorm's backups (they hold rocksdb: or sqlite: "
                     "stores); use the store's own backup"};
  }
  std::error_code ec;
  bool made_dir = false;
  if (exists(dir)) {
    if (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec) || ec) {
      return Error{ErrorCode::invalid_argument,
                   "cannot back up into '" + dir +
                       "': it exists and is not an empty directory (a backup goes into a new "
                       "or empty directory)"};
    }
  } else {
    if (!fs::create_directories(dir, ec) || ec) {
      return Error{ErrorCode::io_error, "cannot make the backup directory '" + dir + "': " +
                                            (ec ? ec.message() : std::string("unknown error"))};
    }
    made_dir = true;
  }
  // Whatever fails from here leaves nothing behind.
  auto undo = [&](Error error) -> Result<BackupManifest> {
    std::error_code ignored;
    if (made_dir) {
      fs::remove_all(dir, ignored);
    } else {
      for (const auto& entry : fs::directory_iterator(dir, ignored))
        fs::remove_all(entry.path(), ignored);
    }
    return error;
  };

  BackupManifest manifest;
  manifest.backend = source.scheme;
  manifest.dorm_version = options.dorm_version;
  manifest.created_at_ms = now_ms();
  StorageUri copy_uri = backup_store_uri(dir, manifest);
  {
    auto original = open_backend(source, OpenMode::read_only);
    if (!original) return undo(std::move(original).error());
    manifest.source = (*original)->describe();
    auto copied = (*original)->backup_to(copy_uri.path);
    if (!copied) return undo(std::move(copied).error());
    manifest.contents = *copied;
  }
  {
    auto copy = detail::open_store(copy_uri, OpenMode::read_only);
    if (!copy) return undo(std::move(copy).error());
    if (options.read_generation) {
      auto generation = options.read_generation(**copy);
      if (!generation) return undo(std::move(generation).error());
      manifest.generation = *generation;
    }
  }
  // Last: a manifest means a whole, synced copy.
  if (auto ok = write_file_durably(join(dir, kBackupManifestName), manifest.to_json()); !ok) {
    return undo(std::move(ok).error());
  }
  return manifest;
}

Result<CopyStats> restore_backup(const std::string& dir, const StorageUri& target,
                                 const RestoreOptions& options) {
  auto manifest = read_backup_manifest(dir);
  if (!manifest) return std::move(manifest).error();
  const std::string into = "cannot restore '" + dir + "' into '" + target.to_string() + "': ";
  if (target.scheme == Scheme::memory) {
    return Error{ErrorCode::invalid_argument,
                 into + "a memory store would be gone when the restore ends; restore into a " +
                     std::string(to_string(manifest->backend)) + ": store"};
  }
  if (target.scheme != manifest->backend) {
    return Error{ErrorCode::invalid_argument,
                 into + "the backup holds a " + std::string(to_string(manifest->backend)) +
                     " store; restore it into a " + std::string(to_string(manifest->backend)) +
                     ": URI"};
  }
  StorageUri copy_uri = backup_store_uri(dir, *manifest);
  if (same_path(copy_uri.path, target.path)) {
    return Error{ErrorCode::invalid_argument, into + "that is the backup's own copy"};
  }
  auto copy = detail::open_store(copy_uri, OpenMode::read_only);
  if (!copy) {
    return Error{copy.error().code, into + "its copy cannot be read: " + copy.error().message};
  }
  // Checked before the target is touched: a copy that lost or gained entries since the
  // manifest was written is not restored.
  auto held = count_entries(**copy);
  if (!held) return std::move(held).error();
  if (*held != manifest->contents) {
    return Error{ErrorCode::corruption, into + "its copy holds " + describe_stats(*held) +
                                            " but its manifest says " +
                                            describe_stats(manifest->contents)};
  }

  // Whether the target may be written: looked at read-only first, so that a refusal
  // leaves even its files as they were (a read-write RocksDB open rewrites its manifest),
  // and again under the lock, which a server may have taken in between.
  std::string marker = restore_marker_path(target);
  auto refusal = [&](Backend& store) -> Result<bool> {
    ScanOptions any;
    any.limit = 1;
    auto first = store.scan(any);
    if (!first) return std::move(first).error();
    bool unfinished = exists(marker);
    if ((!first->empty() || unfinished) && !options.force) {
      return Error{ErrorCode::invalid_argument,
                   into + (unfinished ? "it holds an unfinished restore" : "it is not empty") +
                       "; --force replaces what it holds. Nothing was changed"};
    }
    return !first->empty();
  };
  if (exists(target.path)) {
    // not_found (a directory that holds no store yet) is left to the read-write open.
    if (auto look = detail::open_store(target, OpenMode::read_only); look) {
      if (auto ok = refusal(**look); !ok) return std::move(ok).error();
    }
  }

  // Every commit synced, whatever durability the URI asks of a server.
  StorageUri synced = target;
  synced.durability = Durability::fsync;
  auto opened = detail::open_store(synced, OpenMode::read_write);
  if (!opened) {
    if (opened.error().code == ErrorCode::busy) {
      return Error{ErrorCode::busy, into +
                                        "it is in use (stop the dorm serve that holds it "
                                        "first); nothing was changed. " +
                                        opened.error().message};
    }
    return Error{opened.error().code, into + opened.error().message};
  }
  std::unique_ptr<Backend> store = std::move(*opened);
  auto occupied = refusal(*store);
  if (!occupied) return std::move(occupied).error();

  if (auto ok = write_file_durably(marker, dir + "\n"); !ok) return std::move(ok).error();
  if (*occupied) {
    if (auto ok = clear_store(*store); !ok) return std::move(ok).error();
  }
  CopyStats written;
  auto copied = for_each_page(**copy, [&](const std::vector<KeyValue>& rows) -> Result<void> {
    WriteBatch batch;
    for (const auto& kv : rows) {
      batch.put(kv.key, kv.value);
      ++written.keys;
      written.bytes += kv.key.size() + kv.value.size();
    }
    return store->commit(batch);
  });
  if (!copied) return std::move(copied).error();
  store.reset();  // closed: every commit was synced
  if (written != manifest->contents) {
    return Error{ErrorCode::corruption, into + "copied " + describe_stats(written) + ", not the " +
                                            describe_stats(manifest->contents) +
                                            " of its manifest (the marker stays)"};
  }
  if (auto ok = remove_durably(marker); !ok) return std::move(ok).error();
  return written;
}

}  // namespace dorm::storage
