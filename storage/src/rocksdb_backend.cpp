#include "dorm/storage/rocksdb_backend.hpp"

#include <sys/stat.h>

#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/sst_file_manager.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "dorm/storage/engine_log.hpp"
#include "rocksdb_hooks.hpp"

namespace dorm::storage {
namespace {

Error from_status(const rocksdb::Status& status, const std::string& what) {
  ErrorCode code = ErrorCode::io_error;
  if (status.IsCorruption()) code = ErrorCode::corruption;
  if (status.IsInvalidArgument()) code = ErrorCode::invalid_argument;
  if (status.IsNoSpace()) code = ErrorCode::no_space;
  return Error{code, what + ": " + status.ToString()};
}

std::int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

rocksdb::Slice slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// Opens retried when a file vanished under a read-only open (see open()).
constexpr int kReadOnlyOpenAttempts = 20;

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The write-ahead log files in a database directory (NNNNNN.log), by name.
std::set<std::string> wal_files(const std::string& path) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    std::string name = entry.path().filename().string();
    if (name.ends_with(".log")) out.insert(std::move(name));
  }
  return out;
}

// A backup's writes go to the new database in batches of about this size: large enough to
// amortise each write, small enough that memory stays flat whatever the store's size.
constexpr std::size_t kBackupBatchBytes = 4u << 20;

}  // namespace

rocksdb::Options RocksDbBackend::make_options(const Tuning& tuning) {
  rocksdb::Options options;
  options.create_if_missing = true;
  // Flushes and compactions in the background on a small machine; the default (1 job) can
  // fall behind a burst of commits and stall writes.
  options.max_background_jobs = 2;
  // The WAL, and with it the replay work after a kill, is bounded by the memtables:
  // write_buffer_size x max_write_buffer_number = 128 MiB at most. (max_total_wal_size
  // only acts with more than one column family.) Measured open time after a SIGKILL with a
  // full memtable is in docs/benchmarks.md.
  options.write_buffer_size = 64u << 20;
  options.max_write_buffer_number = 2;
  // No prefix_extractor: see the header.
  // One thread inserts a write group into the memtable, and it remembers where it last
  // inserted for each 16-byte key prefix (an object's keys share one: 0x02, the namespace,
  // 0x00 and the first id bytes), so the keys of one turn's batch, which sort together, are
  // placed from the previous one's position instead of from the top of the skiplist. Costs
  // ~250 bytes per prefix written since the last flush (1,000 busy sessions: ~250 KB). RocksDB
  // ignores the hints when threads insert concurrently, which is off for that. `dorm bench mcp`,
  // 64 connections, 5-round medians, two runs: p99 29.3-29.6 -> 17.8-18.5 ms (concurrency off
  // alone: 18.4-20.0), server CPU per call 136-137 -> 124-130 us, calls/s 11.3-11.6k ->
  // 11.9-12.5k (docs/benchmarks.md).
  options.allow_concurrent_memtable_write = false;
  options.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(16));
  rocksdb::BlockBasedTableOptions table;
  // Whole-key bloom filters (10 bits/key, ~1 % false positives) make a get of a missing
  // key, the common case for "has this object any state yet", skip the data blocks.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;
  table.block_cache = rocksdb::NewLRUCache(tuning.block_cache_bytes);
  // Index and filter blocks live in the block cache, so memory stays bounded by it as the
  // number of table files grows.
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  // Filters and indexes in 4 KiB partitions, with only their small top levels pinned. The
  // cache is split into 64 shards (1 MiB each at 64 MiB), and a whole-file filter larger
  // than a shard is evicted as soon as it is inserted: a table of ~850k keys (one flushed
  // memtable of alarm records) has a 1 MiB filter, a compacted one of 2M keys a 2.5 MiB
  // one, and every point read then read that whole filter from the file again. Found by
  // `dorm bench runtime`: over a compacted store of 1M alarms, turns that set 100 alarms
  // took ~100 ms each (50,000 alarms in 69 s; partitioned: under a second).
  table.partition_filters = true;
  table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
  table.metadata_block_size = 4096;
  table.pin_top_level_index_and_filter = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // RocksDB's info log goes to dorm's log (engine_log.hpp), not to a LOG file: that
  // file's writer asserts when a write to it fails on a full disk, aborting the process.
  options.info_log = std::make_shared<detail::EngineLogger>();
  // No automatic resume after a background error: the backend resumes once its reserve
  // is free again (see resume_if_stopped).
  options.max_bgerror_resume_count = 0;
  return options;
}

rocksdb::WriteOptions RocksDbBackend::make_write_options(Durability durability) {
  rocksdb::WriteOptions w;
  w.sync = durability == Durability::fsync;
  w.disableWAL = false;
  return w;
}

RocksDbBackend::RocksDbBackend(std::string path, Durability durability, OpenMode mode,
                               std::unique_ptr<rocksdb::DB> db)
    : path_(std::move(path)),
      durability_(durability),
      mode_(mode),
      write_options_(make_write_options(durability)),
      db_(std::move(db)) {}

RocksDbBackend::~RocksDbBackend() {
  if (db_) {
    // Close() reports errors that the destructor would swallow silently; nothing here
    // can act on them, but they must not be thrown.
    (void)db_->Close();
  }
}

Result<std::unique_ptr<RocksDbBackend>> RocksDbBackend::open(const std::string& path,
                                                             Durability durability,
                                                             OpenMode mode,
                                                             const Tuning& tuning) {
  rocksdb::Options options = make_options(tuning);
  std::unique_ptr<rocksdb::Env> env;
  if (tuning.file_system) {
    env = rocksdb::NewCompositeEnv(tuning.file_system);
    options.env = env.get();
  } else {
    options.env = rocksdb::Env::Default();
  }
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<SpaceReserve> reserve;
  if (mode == OpenMode::read_write) {
    options.listeners.push_back(std::make_shared<detail::StoreEvents>(stopped));
    // Made here rather than left to RocksDB so that it logs through the engine logger.
    // It postpones a compaction that would not fit in the free space instead of letting
    // it fail half-way.
    options.sst_file_manager.reset(rocksdb::NewSstFileManager(options.env, options.info_log));
    if (!tuning.reserve.disabled()) {
      SpaceReserve::Probe probe = tuning.probe;
      if (!probe) probe = [path] { return probe_filesystem(path); };
      auto space = probe();
      if (!space) return std::move(space).error();
      std::uint64_t keep = tuning.reserve.resolve(space->total_bytes);
      // Refused before RocksDB writes anything: an open replays the WAL into a new
      // table file and writes a new manifest, and on a full disk that is where it failed.
      if (space->free_bytes < keep) {
        return Error{ErrorCode::no_space,
                     "cannot open rocksdb at '" + path + "' for writing: " +
                         format_bytes(space->free_bytes) + " free on its filesystem, under the reserve of " +
                         format_bytes(keep) + " (reserve=" + tuning.reserve.to_string() +
                         " in the storage URI). Free space there, or lower the reserve; "
                         "`dorm inspect` still reads the store"};
      }
      reserve = std::make_unique<SpaceReserve>(keep, "rocksdb at '" + path + "'", std::move(probe),
                                               tuning.now ? tuning.now : SpaceReserve::Now(monotonic_ms));

    }
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status status;
  if (mode == OpenMode::read_only) {
    // Every database has a CURRENT file naming its manifest. Checked here so that a
    // missing store gets a plain answer and nothing, not even the directory, is made.
    if (!is_file(path + "/CURRENT")) {
      return Error{ErrorCode::not_found, "no rocksdb store at '" + path + "'"};
    }
    options.create_if_missing = false;
    // OpenForReadOnly, not OpenAsSecondary: a secondary needs a directory of its own to
    // write its log into and exists to follow the primary over time; a one-shot look
    // needs neither, and read-only replays the WAL, so it misses no acknowledged commit.
    //
    // A serving owner deletes WAL and table files as it flushes and compacts, and one may
    // go between the moment the open lists it and the moment it reads it ("No such file",
    // seen under a busy writer in tests/storage/read_only_test.cpp). Each attempt starts
    // over from CURRENT, so a retry sees the files as they are now; once open, every table
    // file is held open (max_open_files = -1) and the WAL is in memory.
    //
    // A file can also go without an error: the open reads the manifest (which table files
    // hold what, and from which WAL on the rest is) and then lists the WAL files. If the
    // owner finishes a flush in between, its new table file is not in the manifest as
    // read and the WAL it came from may already be deleted: the open succeeds and misses
    // that WAL's commits (seen in tests/storage/backup_test.cpp, with an owner that
    // flushes while backups open the store). WALs are deleted oldest first, and only
    // after a flush, so when every WAL present before the open is still there after it,
    // none the open needed can have gone; otherwise the open is dropped and tried again.
    // (A compaction deletes table files only, which the open fails on by itself. What
    // this cannot see: a WAL made and deleted entirely within one open, which takes two
    // flushes, so two full 64 MiB memtables, written while one open runs.)
    options.max_open_files = -1;
    for (int attempt = 1;; ++attempt) {
      std::set<std::string> wals_before = wal_files(path);
      status = rocksdb::DB::OpenForReadOnly(options, path, &raw);
      if (status.ok()) {
        std::set<std::string> wals_after = wal_files(path);
        if (std::includes(wals_after.begin(), wals_after.end(), wals_before.begin(),
                          wals_before.end())) {
          break;
        }
        delete raw;
        raw = nullptr;
        if (attempt == kReadOnlyOpenAttempts) {
          return Error{ErrorCode::unavailable,
                       "rocksdb at '" + path + "' flushed its write-ahead log during each of " +
                           std::to_string(kReadOnlyOpenAttempts) +
                           " read-only opens, so none could be trusted to be whole; try again"};
        }
        continue;
      }
      bool vanished = status.IsPathNotFound() ||
                      (status.IsIOError() &&
                       status.ToString().find("No such file") != std::string::npos);
      if (!vanished || attempt == kReadOnlyOpenAttempts) break;
    }
  } else {
    status = rocksdb::DB::Open(options, path, &raw);
  }
  if (!status.ok()) {
    // A held LOCK file surfaces as an IOError mentioning the lock.
    if (status.IsIOError() && status.ToString().find("lock") != std::string::npos) {
      return Error{ErrorCode::busy, "rocksdb at '" + path +
                                        "' is locked by another process: " + status.ToString()};
    }
    return from_status(status, "cannot open rocksdb at '" + path + "'");
  }
  auto backend = std::unique_ptr<RocksDbBackend>(
      new RocksDbBackend(path, durability, mode, std::unique_ptr<rocksdb::DB>(raw)));
  backend->env_ = std::move(env);
  backend->reserve_ = std::move(reserve);
  backend->stopped_ = std::move(stopped);
  backend->now_ = tuning.now ? tuning.now : SpaceReserve::Now(monotonic_ms);
  return backend;
}

std::string RocksDbBackend::describe() const {
  std::string out = "rocksdb:" + path_;
  if (durability_ == Durability::fsync) out += "?durability=fsync";
  return out;
}

Result<std::optional<std::string>> RocksDbBackend::get(std::string_view key) {
  std::string value;
  rocksdb::Status status = db_->Get(rocksdb::ReadOptions(), slice(key), &value);
  if (status.IsNotFound()) return std::optional<std::string>{};
  if (!status.ok()) return from_status(status, "rocksdb get failed");
  return std::optional<std::string>{std::move(value)};
}

Result<std::vector<std::optional<std::string>>> RocksDbBackend::get_many(
    std::span<const std::string> keys) {
  // MultiGet reads every key from one implicit snapshot.
  std::vector<rocksdb::Slice> slices;
  slices.reserve(keys.size());
  for (const auto& k : keys) slices.push_back(slice(k));
  std::vector<std::string> values;
  std::vector<rocksdb::Status> statuses = db_->MultiGet(rocksdb::ReadOptions(), slices, &values);
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) {
      out.emplace_back();
    } else if (!statuses[i].ok()) {
      return from_status(statuses[i], "rocksdb multi-get failed");
    } else {
      out.emplace_back(std::move(values[i]));
    }
  }
  return out;
}

Result<std::vector<KeyValue>> RocksDbBackend::scan(const ScanOptions& options) {
  if (auto ok = options.validate(); !ok) return std::move(ok).error();
  ScanOptions::Bounds bounds = options.bounds();
  std::vector<KeyValue> out;
  if (bounds.empty()) return out;
  // An iterator reads from the implicit snapshot taken when it is created, so the scan
  // sees each commit entirely or not at all. The bounds let RocksDB skip files and stop
  // early; the explicit checks below keep the contract independent of them.
  rocksdb::Slice lower = slice(bounds.lower);
  rocksdb::Slice upper;
  rocksdb::ReadOptions read;
  read.iterate_lower_bound = &lower;
  if (bounds.upper) {
    upper = slice(*bounds.upper);
    read.iterate_upper_bound = &upper;
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
  auto full = [&] { return options.limit != 0 && out.size() >= options.limit; };
  if (!options.reverse) {
    for (it->Seek(lower); it->Valid() && !full(); it->Next()) {
      out.push_back({it->key().ToString(), it->value().ToString()});
    }
  } else {
    if (bounds.upper) {
      it->SeekForPrev(upper);
      if (it->Valid() && it->key() == upper) it->Prev();
    } else {
      it->SeekToLast();
    }
    for (; it->Valid() && !full(); it->Prev()) {
      if (it->key().compare(lower) < 0) break;
      out.push_back({it->key().ToString(), it->value().ToString()});
    }
  }
  if (!it->status().ok()) return from_status(it->status(), "rocksdb scan failed");
  return out;
}

Result<void> RocksDbBackend::commit(const WriteBatch& batch) {
  if (mode_ == OpenMode::read_only) {
    return Error{ErrorCode::read_only,
                 describe() + " was opened read-only: the commit was refused, nothing written"};
  }
  if (auto ok = batch.validate(); !ok) return ok;
  if (batch.empty()) return {};
  // One allocation up front: the payload plus per-record headers (tag, varint lengths).
  rocksdb::WriteBatch wb(batch.byte_size() + 12 * batch.size() + 12);
  for (const auto op : batch.ops()) {
    rocksdb::Status s;
    switch (op.kind) {
      case WriteBatch::Kind::put: s = wb.Put(slice(op.key), slice(op.value)); break;
      case WriteBatch::Kind::del: s = wb.Delete(slice(op.key)); break;
      case WriteBatch::Kind::delete_range:
        if (op.key != op.value) s = wb.DeleteRange(slice(op.key), slice(op.value));
        break;
    }
    if (!s.ok()) return from_status(s, "rocksdb batch rejected");
  }
  if (reserve_) {
    // The batch's encoded size is what its WAL record costs; what RocksDB writes later
    // for it (flushes, compactions) is what the reserve is for.
    if (auto room = reserve_->admit(wb.GetDataSize()); !room) return room;
  }
  if (auto resumed = resume_if_stopped(); !resumed) return resumed;
  rocksdb::Status status = db_->Write(write_options_, &wb);
  if (!status.ok()) {
    // A write refused by a stopped database, or one that hit the disk's end itself
    // (reserve=0, or another program filled the disk): resume once space allows.
    if (status.IsIOError()) stopped_->store(true, std::memory_order_release);
    return from_status(status, "rocksdb commit failed");
  }
  return {};
}

Result<void> RocksDbBackend::check_space() {
  if (mode_ == OpenMode::read_only) return {};
  if (reserve_) {
    if (auto room = reserve_->check(); !room) return room;
  }
  // Space is there: a database stopped by a full disk takes writes again from now, not
  // only from the next commit.
  return resume_if_stopped();
}

Result<void> RocksDbBackend::resume_if_stopped() {
  if (!stopped_->load(std::memory_order_acquire)) return {};
  std::lock_guard lock(resume_mutex_);
  if (!stopped_->load(std::memory_order_acquire)) return {};
  // A resume flushes the memtables, which on a disk still full fails after writing for a
  // while (seconds, with reserve=0): tried at most once per kResumeInterval, and in
  // between the last failure is the answer, so requests on a full disk stay cheap.
  auto now = now_();
  if (last_resume_failure_ && now - resume_failed_at_ms_ < kResumeInterval.count()) {
    return *last_resume_failure_;
  }
  rocksdb::Status status = db_->Resume();
  if (!status.ok()) {
    last_resume_failure_ = from_status(status, "rocksdb at '" + path_ + "' cannot take writes yet");
    resume_failed_at_ms_ = now;
    return *last_resume_failure_;
  }
  last_resume_failure_.reset();
  stopped_->store(false, std::memory_order_release);
  engine_log(EngineLogLevel::warn, "rocksdb", "writes resumed after a background error (" + path_ + ")");
  return {};
}

}  // namespace dorm::storage

namespace dorm::storage {

Result<CopyStats> RocksDbBackend::backup_to(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    return Error{ErrorCode::invalid_argument,
                 "cannot back up " + describe() + " into '" + path +
                     "': it exists already (a backup is written to a new path)"};
  }
  // Same options as a store dorm opens, so the copy reads and compacts like the original.
  rocksdb::Options options = make_options(Tuning{});
  options.error_if_exists = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status status = rocksdb::DB::Open(options, path, &raw);
  if (!status.ok()) return from_status(status, "cannot create the backup rocksdb at '" + path + "'");
  std::unique_ptr<rocksdb::DB> copy(raw);

  // No WAL: nothing of the copy counts until the final flush has synced it, and a copy
  // interrupted before that is discarded whole (backup.hpp writes its manifest last).
  rocksdb::WriteOptions write;
  write.disableWAL = true;
  // The scan touches every block once: keep the server's hot blocks in the cache.
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
  CopyStats stats;
  rocksdb::WriteBatch batch;
  auto write_batch = [&]() -> Result<void> {
    if (batch.Count() == 0) return {};
    rocksdb::Status s = copy->Write(write, &batch);
    if (!s.ok()) return from_status(s, "cannot write the backup rocksdb at '" + path + "'");
    batch.Clear();
    return {};
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Status s = batch.Put(it->key(), it->value());
    if (!s.ok()) return from_status(s, "cannot copy a key into the backup");
    ++stats.keys;
    stats.bytes += it->key().size() + it->value().size();
    if (batch.GetDataSize() >= kBackupBatchBytes) {
      if (auto ok = write_batch(); !ok) return std::move(ok).error();
    }
  }
  if (!it->status().ok()) return from_status(it->status(), "cannot read " + describe() + " for a backup");
  it.reset();
  if (auto ok = write_batch(); !ok) return std::move(ok).error();
  rocksdb::FlushOptions flush;
  flush.wait = true;
  status = copy->Flush(flush);
  if (!status.ok()) return from_status(status, "cannot flush the backup rocksdb at '" + path + "'");
  status = copy->Close();
  if (!status.ok()) return from_status(status, "cannot close the backup rocksdb at '" + path + "'");
  return stats;
}

}  // namespace dorm::storage
