#include "dorm/storage/sqlite_backend.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace dorm::storage {
namespace {

// How long a connection waits for another connection's write lock before failing.
constexpr int kBusyTimeoutMs = 10'000;

std::atomic<std::uint64_t> next_instance{1};

}  // namespace

// A thread's connection with its prepared statements. Used only by the thread that owns
// it; closed by the backend's destructor.
class SqliteBackend::Connection {
 public:
  ~Connection() { close(); }

  void close() {
    for (sqlite3_stmt* s : {get, scan_fwd, scan_fwd_upper, scan_rev, scan_rev_upper, put, del,
                            del_range, begin_read, begin_write, commit, rollback}) {
      sqlite3_finalize(s);
    }
    get = scan_fwd = scan_fwd_upper = scan_rev = scan_rev_upper = put = del = del_range =
        begin_read = begin_write = commit = rollback = nullptr;
    if (db) sqlite3_close_v2(db);
    db = nullptr;
  }

  sqlite3* db = nullptr;
  sqlite3_stmt* get = nullptr;
  sqlite3_stmt* scan_fwd = nullptr;
  sqlite3_stmt* scan_fwd_upper = nullptr;
  sqlite3_stmt* scan_rev = nullptr;
  sqlite3_stmt* scan_rev_upper = nullptr;
  sqlite3_stmt* put = nullptr;
  sqlite3_stmt* del = nullptr;
  sqlite3_stmt* del_range = nullptr;
  sqlite3_stmt* begin_read = nullptr;
  sqlite3_stmt* begin_write = nullptr;
  sqlite3_stmt* commit = nullptr;
  sqlite3_stmt* rollback = nullptr;
};

namespace {

Error sqlite_error(sqlite3* db, const std::string& what) {
  int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  ErrorCode ours = ErrorCode::io_error;
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED) ours = ErrorCode::busy;
  if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB) {
    ours = ErrorCode::corruption;
  }
  return Error{ours, what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(code))};
}

// Binds `bytes` as a BLOB (never NULL, even when empty: a NULL would compare differently).
void bind_blob(sqlite3_stmt* stmt, int index, std::string_view bytes) {
  static const char kEmpty = 0;
  sqlite3_bind_blob(stmt, index, bytes.empty() ? &kEmpty : bytes.data(),
                    static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
}

std::string column_bytes(sqlite3_stmt* stmt, int column) {
  const void* data = sqlite3_column_blob(stmt, column);
  int size = sqlite3_column_bytes(stmt, column);
  return data ? std::string(static_cast<const char*>(data), static_cast<std::size_t>(size))
              : std::string();
}

// Resets and clears a statement when the scope ends, however it ends.
class StatementUse {
 public:
  explicit StatementUse(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StatementUse() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  sqlite3_stmt* operator*() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

bool step_done(sqlite3_stmt* stmt) { return sqlite3_step(stmt) == SQLITE_DONE; }

Result<void> exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string message = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{ErrorCode::io_error, std::string("sqlite: ") + sql + ": " + message};
  }
  return {};
}

}  // namespace

SqliteBackend::SqliteBackend(std::string path, Durability durability, OpenMode mode,
                             int lock_fd)
    : path_(std::move(path)),
      durability_(durability),
      mode_(mode),
      instance_(next_instance.fetch_add(1)),
      lock_fd_(lock_fd) {}

SqliteBackend::~SqliteBackend() {
  {
    std::lock_guard lock(connections_mutex_);
    for (auto& c : connections_) c->close();
    connections_.clear();
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Result<std::unique_ptr<SqliteBackend>> SqliteBackend::open(const std::string& path,
                                                           Durability durability,
                                                           OpenMode mode) {
  if (mode == OpenMode::read_only) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return Error{ErrorCode::not_found, "no sqlite store at '" + path + "'"};
    }
    auto backend =
        std::unique_ptr<SqliteBackend>(new SqliteBackend(path, durability, mode, -1));
    auto first = backend->connection();
    if (!first) return std::move(first).error();
    return backend;
  }
  std::string lock_path = path + ".lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error{ErrorCode::io_error,
                 "cannot open sqlite lock file '" + lock_path + "': " + std::strerror(errno)};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Error{ErrorCode::busy,
                   "sqlite database '" + path + "' is open in another dorm process"};
    }
    return Error{ErrorCode::io_error, "cannot lock '" + lock_path + "': " + std::strerror(err)};
  }
  auto backend =
      std::unique_ptr<SqliteBackend>(new SqliteBackend(path, durability, mode, fd));
  // Open the first connection now, so an unusable path fails here rather than at first use.
  auto first = backend->connection();
  if (!first) return std::move(first).error();
  return backend;
}

std::string SqliteBackend::describe() const {
  std::string out = "sqlite:" + path_;
  if (durability_ == Durability::fsync) out += "?durability=fsync";
  return out;
}

Result<SqliteBackend::Connection*> SqliteBackend::connection() {
  // Per thread, per backend instance. The instance number is never reused, so an entry
  // left behind by a closed backend is never handed out again.
  thread_local std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> mine;
  if (auto it = mine.find(instance_); it != mine.end()) return it->second.get();

  auto conn = std::make_shared<Connection>();
  const bool read_only = mode_ == OpenMode::read_only;
  int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
              SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path_.c_str(), &conn->db, flags, nullptr) != SQLITE_OK) {
    Error e = sqlite_error(conn->db, "cannot open sqlite database '" + path_ + "'");
    return e;
  }
  sqlite3_busy_timeout(conn->db, kBusyTimeoutMs);
  // Read-only: the owner chose journal mode (WAL is recorded in the file) and durability;
  // setting either, or creating the table, would be a write.
  if (!read_only) {
    const char* sync = durability_ == Durability::fsync ? "PRAGMA synchronous=FULL"
                                                        : "PRAGMA synchronous=NORMAL";
    for (const char* sql : {"PRAGMA journal_mode=WAL", sync,
                            "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) "
                            "WITHOUT ROWID"}) {
      if (auto ok = exec(conn->db, sql); !ok) {
        return Error{ErrorCode::io_error,
                     "cannot set up sqlite database '" + path_ + "': " + ok.error().message};
      }
    }
  }
  struct Prepared {
    sqlite3_stmt** slot;
    const char* sql;
  };
  for (auto [slot, sql] : {
           Prepared{&conn->get, "SELECT v FROM kv WHERE k = ?1"},
           Prepared{&conn->scan_fwd, "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k ASC LIMIT ?3"},
           Prepared{&conn->scan_fwd_upper,
                    "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k ASC LIMIT ?3"},
           Prepared{&conn->scan_rev, "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k DESC LIMIT ?3"},
           Prepared{&conn->scan_rev_upper,
                    "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k DESC LIMIT ?3"},
           Prepared{&conn->put, "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)"},
           Prepared{&conn->del, "DELETE FROM kv WHERE k = ?1"},
           Prepared{&conn->del_range, "DELETE FROM kv WHERE k >= ?1 AND k < ?2"},
           Prepared{&conn->begin_read, "BEGIN DEFERRED"},
           Prepared{&conn->begin_write, "BEGIN IMMEDIATE"},
           Prepared{&conn->commit, "COMMIT"},
           Prepared{&conn->rollback, "ROLLBACK"},
       }) {
    if (sqlite3_prepare_v3(conn->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, nullptr) !=
        SQLITE_OK) {
      return sqlite_error(conn->db, "sqlite database '" + path_ + "': cannot prepare '" + sql + "'");
    }
  }
  {
    std::lock_guard lock(connections_mutex_);
    connections_.push_back(conn);
  }
  mine.emplace(instance_, conn);
  return conn.get();
}

Result<std::optional<std::string>> SqliteBackend::get(std::string_view key) {
  auto c = connection();
  if (!c) return std::move(c).error();
  StatementUse stmt((*c)->get);
  bind_blob(*stmt, 1, key);
  int rc = sqlite3_step(*stmt);
  if (rc == SQLITE_ROW) return std::optional<std::string>{column_bytes(*stmt, 0)};
  if (rc == SQLITE_DONE) return std::optional<std::string>{};
  return sqlite_error((*c)->db, "sqlite get failed");
}

Result<std::vector<std::optional<std::string>>> SqliteBackend::get_many(
    std::span<const std::string> keys) {
  auto c = connection();
  if (!c) return std::move(c).error();
  Connection& conn = **c;
  // One read transaction: every SELECT in it reads the same snapshot.
  {
    StatementUse begin(conn.begin_read);
    if (!step_done(*begin)) return sqlite_error(conn.db, "sqlite cannot begin a read");
  }
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (const auto& key : keys) {
    StatementUse stmt(conn.get);
    bind_blob(*stmt, 1, key);
    int rc = sqlite3_step(*stmt);
    if (rc == SQLITE_ROW) {
      out.emplace_back(column_bytes(*stmt, 0));
    } else if (rc == SQLITE_DONE) {
      out.emplace_back();
    } else {
      Error e = sqlite_error(conn.db, "sqlite multi-get failed");
      StatementUse rollback(conn.rollback);
      sqlite3_step(*rollback);
      return e;
    }
  }
  StatementUse commit(conn.commit);
  if (!step_done(*commit)) return sqlite_error(conn.db, "sqlite cannot end a read");
  return out;
}

Result<std::vector<KeyValue>> SqliteBackend::scan(const ScanOptions& options) {
  if (auto ok = options.validate(); !ok) return std::move(ok).error();
  ScanOptions::Bounds bounds = options.bounds();
  std::vector<KeyValue> out;
  if (bounds.empty()) return out;
  auto c = connection();
  if (!c) return std::move(c).error();
  Connection& conn = **c;
  sqlite3_stmt* chosen = options.reverse ? (bounds.upper ? conn.scan_rev_upper : conn.scan_rev)
                                         : (bounds.upper ? conn.scan_fwd_upper : conn.scan_fwd);
  StatementUse stmt(chosen);
  bind_blob(*stmt, 1, bounds.lower);
  if (bounds.upper) bind_blob(*stmt, 2, *bounds.upper);
  sqlite3_bind_int64(*stmt, 3, options.limit == 0 ? -1 : static_cast<sqlite3_int64>(options.limit));
  int rc;
  while ((rc = sqlite3_step(*stmt)) == SQLITE_ROW) {
    out.push_back({column_bytes(*stmt, 0), column_bytes(*stmt, 1)});
  }
  if (rc != SQLITE_DONE) return sqlite_error(conn.db, "sqlite scan failed");
  return out;
}

Result<void> SqliteBackend::commit(const WriteBatch& batch) {
  if (mode_ == OpenMode::read_only) {
    return Error{ErrorCode::read_only,
                 describe() + " was opened read-only: the commit was refused, nothing written"};
  }
  if (auto ok = batch.validate(); !ok) return ok;
  if (batch.empty()) return {};
  auto c = connection();
  if (!c) return std::move(c).error();
  Connection& conn = **c;
  {
    StatementUse begin(conn.begin_write);
    if (!step_done(*begin)) return sqlite_error(conn.db, "sqlite cannot begin a commit");
  }
  for (const auto op : batch.ops()) {
    sqlite3_stmt* chosen = op.kind == WriteBatch::Kind::put ? conn.put
                           : op.kind == WriteBatch::Kind::del ? conn.del
                                                              : conn.del_range;
    StatementUse stmt(chosen);
    bind_blob(*stmt, 1, op.key);
    if (op.kind != WriteBatch::Kind::del) bind_blob(*stmt, 2, op.value);
    if (!step_done(*stmt)) {
      Error e = sqlite_error(conn.db, "sqlite commit failed");
      StatementUse rollback(conn.rollback);
      sqlite3_step(*rollback);
      return e;
    }
  }
  StatementUse commit(conn.commit);
  if (!step_done(*commit)) {
    Error e = sqlite_error(conn.db, "sqlite commit failed");
    StatementUse rollback(conn.rollback);
    sqlite3_step(*rollback);
    return e;
  }
  return {};
}

Result<CopyStats> SqliteBackend::backup_to(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    return Error{ErrorCode::invalid_argument,
                 "cannot back up " + describe() + " into '" + path +
                     "': it exists already (a backup is written to a new path)"};
  }
  auto c = connection();
  if (!c) return std::move(c).error();
  sqlite3* source = (*c)->db;
  sqlite3* copy = nullptr;
  // The destination closes however this ends (the caller removes a failed copy).
  struct Close {
    sqlite3*& db;
    ~Close() { sqlite3_close_v2(db); }
  } close_copy{copy};
  if (sqlite3_open_v2(path.c_str(), &copy,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    return sqlite_error(copy, "cannot create the backup sqlite database '" + path + "'");
  }
  // The copy's pages are synced when the backup commits them (synchronous=FULL, the
  // default of a connection that has not switched to WAL yet). It becomes a WAL database
  // like the original when next opened: the mode is recorded in the copied header.
  if (auto ok = exec(copy, "PRAGMA synchronous=FULL"); !ok) return std::move(ok).error();
  sqlite3_backup* backup = sqlite3_backup_init(copy, "main", source, "main");
  if (!backup) return sqlite_error(copy, "cannot start a backup of " + describe());
  // -1: every page in one step, under one read transaction on the source. Copying in
  // smaller steps would let the source's commits in between restart the copy.
  int rc = sqlite3_backup_step(backup, -1);
  int finished = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    return Error{(rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED ? ErrorCode::busy
                                                                              : ErrorCode::io_error,
                 "backup of " + describe() + " into '" + path + "' failed: " + sqlite3_errstr(rc)};
  }
  if (finished != SQLITE_OK) {
    return sqlite_error(copy, "backup of " + describe() + " into '" + path + "' failed");
  }
  // Counted in the copy, which is exactly what the backup holds.
  sqlite3_stmt* count = nullptr;
  if (sqlite3_prepare_v2(copy, "SELECT count(*), coalesce(sum(length(k) + length(v)), 0) FROM kv",
                         -1, &count, nullptr) != SQLITE_OK) {
    return sqlite_error(copy, "cannot count the backup sqlite database '" + path + "'");
  }
  CopyStats stats;
  rc = sqlite3_step(count);
  if (rc == SQLITE_ROW) {
    stats.keys = static_cast<std::uint64_t>(sqlite3_column_int64(count, 0));
    stats.bytes = static_cast<std::uint64_t>(sqlite3_column_int64(count, 1));
  }
  sqlite3_finalize(count);
  if (rc != SQLITE_ROW) return sqlite_error(copy, "cannot count the backup sqlite database '" + path + "'");
  return stats;
}

Result<int> SqliteBackend::synchronous_pragma() {
  auto c = connection();
  if (!c) return std::move(c).error();
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2((*c)->db, "PRAGMA synchronous", -1, &stmt, nullptr) != SQLITE_OK) {
    return sqlite_error((*c)->db, "cannot read PRAGMA synchronous");
  }
  int value = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  return value;
}

}  // namespace dorm::storage
