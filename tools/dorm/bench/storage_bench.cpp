// `dorm bench storage` — the cost of the Backend layer over raw RocksDB.
//
// Every row runs the same operations, with the same keys, values, Options and
// WriteOptions, against each subject: raw RocksDB (the baseline, its API called directly),
// dorm's RocksDbBackend, SqliteBackend and MemoryBackend, each on its own directory. Rows
// and subjects are interleaved within each round, so a slow moment of the machine hits
// every subject alike; each figure is the median over the rounds. The ratio is
// subject / raw RocksDB (higher is better; the target for dorm's RocksDB is >= 0.9).
#include "storage_bench.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "bench_stats.hpp"
#include "raw_libpq.hpp"
#include "self_child.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/open.hpp"
#include "dorm/storage/postgres_backend.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "dorm/storage/sqlite_backend.hpp"


namespace dorm::bench {
namespace {

namespace fs = std::filesystem;
using storage::Durability;

constexpr int kGetKeys = 100'000;
constexpr int kScanPrefixes = 1'000;
constexpr int kScanWidth = 100;
constexpr std::size_t kValueBytes = 100;

using Pairs = std::vector<std::pair<std::string, std::string>>;

// What every subject can do; one virtual call per operation for all of them.
class Subject {
 public:
  virtual ~Subject() = default;
  virtual void commit(const Pairs& puts) = 0;
  virtual bool get(const std::string& key, std::string& value) = 0;
  // Materialises the prefix's entries in a fresh vector of owned strings, as a caller of
  // that API would, and returns how many there were.
  virtual std::size_t scan_prefix(const std::string& prefix) = 0;
  virtual std::string get_description() const { return {}; }
};

// The baseline: RocksDB's own API, opened with dorm's exact Options and WriteOptions.
class RawRocksDb final : public Subject {
 public:
  RawRocksDb(const std::string& path, Durability durability)
      : write_options_(storage::RocksDbBackend::make_write_options(durability)) {
    rocksdb::DB* raw = nullptr;
    auto status = rocksdb::DB::Open(storage::RocksDbBackend::make_options({}), path, &raw);
    if (!status.ok()) throw std::runtime_error(status.ToString());
    db_.reset(raw);
  }
  void commit(const Pairs& puts) override {
    rocksdb::WriteBatch batch;
    for (const auto& [k, v] : puts) batch.Put(k, v);
    if (!db_->Write(write_options_, &batch).ok()) throw std::runtime_error("raw write failed");
  }
  bool get(const std::string& key, std::string& value) override {
    return db_->Get(rocksdb::ReadOptions(), key, &value).ok();
  }
  std::size_t scan_prefix(const std::string& prefix) override {
    Pairs out;
    std::string end = *storage::ScanOptions::prefix_successor(prefix);
    rocksdb::Slice lower(prefix), upper(end);
    rocksdb::ReadOptions read;
    read.iterate_lower_bound = &lower;
    read.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
    for (it->Seek(lower); it->Valid(); it->Next()) {
      out.emplace_back(it->key().ToString(), it->value().ToString());
    }
    return out.size();
  }
  void flush() { db_->Flush(rocksdb::FlushOptions()); }

 private:
  rocksdb::WriteOptions write_options_;
  std::unique_ptr<rocksdb::DB> db_;
};

// The PostgreSQL baseline: the same statements over libpq directly (raw_libpq.hpp).
class RawPostgres final : public Subject {
 public:
  RawPostgres(const std::string& conninfo, const std::string& table)
      : raw_(conninfo, table, false) {}
  void commit(const Pairs& puts) override { raw_.commit(puts); }
  bool get(const std::string& key, std::string& value) override { return raw_.get(key, value); }
  std::size_t scan_prefix(const std::string& prefix) override {
    return raw_.scan_prefix(prefix, *storage::ScanOptions::prefix_successor(prefix));
  }

 private:
  RawLibpq raw_;
};

// Any dorm Backend.
class ThroughBackend final : public Subject {
 public:
  explicit ThroughBackend(std::unique_ptr<storage::Backend> backend)
      : backend_(std::move(backend)) {}
  void commit(const Pairs& puts) override {
    storage::WriteBatch batch;
    for (const auto& [k, v] : puts) batch.put(k, v);
    if (!backend_->commit(batch)) throw std::runtime_error("backend commit failed");
  }
  bool get(const std::string& key, std::string& value) override {
    auto r = backend_->get(key);
    if (!r || !r->has_value()) return false;
    value = std::move(**r);
    return true;
  }
  std::size_t scan_prefix(const std::string& prefix) override {
    auto r = backend_->scan(storage::ScanOptions::with_prefix(prefix));
    if (!r) throw std::runtime_error("backend scan failed");
    return r->size();
  }
  storage::Backend& backend() { return *backend_; }
  std::string get_description() const override { return backend_->describe(); }

 private:
  std::unique_ptr<storage::Backend> backend_;
};

// A scale-out node's commits (docs/scale-out.md): every batch of one object under its lease,
// checked in the same transaction (Backend::commit_leased). Reads as any backend.
class LeasedBackend final : public Subject {
 public:
  explicit LeasedBackend(std::unique_ptr<storage::Backend> backend) : through_(std::move(backend)) {
    auto* leases = through_.backend().leases();
    if (!leases) throw std::runtime_error("the leased subject's store has no leases");
    // A day: longer than any run (a lease's expiry is a timestamp the store must hold).
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    auto grant = leases->acquire(kObject, "bench", now, now + 86'400'000);
    if (!grant) throw std::runtime_error("could not take the bench lease: " + grant.error().describe());
    if (!grant->granted()) throw std::runtime_error("the bench lease is held by " + grant->holder->node);
    token_ = grant->token;
  }
  void commit(const Pairs& puts) override {
    storage::WriteBatch batch;
    for (const auto& [k, v] : puts) batch.put(k, v);
    if (!through_.backend().commit_leased(batch, kObject, token_)) {
      throw std::runtime_error("leased commit failed");
    }
  }
  bool get(const std::string& key, std::string& value) override { return through_.get(key, value); }
  std::size_t scan_prefix(const std::string& prefix) override { return through_.scan_prefix(prefix); }

 private:
  static constexpr std::string_view kObject = "bench-object";
  ThroughBackend through_;
  std::uint64_t token_ = 0;
};


template <class T>
T must(Result<T> r) {
  if (!r) throw std::runtime_error(r.error().describe());
  return std::move(r).value();
}

std::string key(const char* format, int a, int b = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

// One row of the table: `count` operations, the i-th being op(subject, i).
struct Row {
  std::string name;
  std::string unit;
  bool fsync = false;
  int count = 0;
  std::function<void(Subject&, int)> op;
};

// Each round runs a row in this many slices, subjects alternating slice by slice, so a
// slow stretch of the disk or the CPU lands on every subject alike.
constexpr int kSlices = 10;

struct SubjectSet {
  std::vector<std::string> names;
  std::vector<std::unique_ptr<Subject>> subjects;
};

void prefill(Subject& s) {
  std::string value(kValueBytes, 'v');
  Pairs batch;
  for (int i = 0; i < kGetKeys; ++i) {
    batch.emplace_back(key("g/%08d", i), value);
    if (batch.size() == 1000) {
      s.commit(batch);
      batch.clear();
    }
  }
  for (int p = 0; p < kScanPrefixes; ++p) {
    for (int i = 0; i < kScanWidth; ++i) batch.emplace_back(key("s/%06d/%03d", p, i), value);
    s.commit(batch);
    batch.clear();
  }
}

void print_table(const std::vector<Row>& rows, const std::vector<std::string>& names,
                 const std::map<std::pair<std::string, std::string>, std::vector<double>>& results) {
  std::printf("\n| row | unit |");
  for (const auto& n : names) {
    std::printf(" %s |", n.c_str());
    if (n != names.front()) std::printf(" ratio |");
  }
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < names.size() * 2 - 1; ++i) std::printf("---:|");
  std::printf("\n");
  for (const auto& row : rows) {
    std::printf("| %s | %s |", row.name.c_str(), row.unit.c_str());
    double base = 0;
    for (const auto& n : names) {
      auto it = results.find({row.name, n});
      if (it == results.end()) {
        std::printf(" – |");
        if (n != names.front()) std::printf(" – |");
        continue;
      }
      double m = median(it->second);
      std::printf(" %.0f |", m);
      if (n == names.front()) {
        base = m;
      } else {
        std::printf(" %.2f |", base > 0 ? m / base : 0.0);
      }
    }
    std::printf("\n");
  }
}

double open_after_kill_ms(const std::string& dir) {
  std::string said;
  {
    SelfChild child({"bench", "storage-fill", dir}, "fill");
    said = child.read_some();  // blocks until "filled" (or the child dies)
  }  // SIGKILLed here
  if (said.find("filled") == std::string::npos) {
    throw std::runtime_error("the fill child did not fill the memtable");
  }
  auto start = std::chrono::steady_clock::now();
  auto backend = must(storage::RocksDbBackend::open(dir, Durability::process));
  double ms = seconds_since(start) * 1000;
  // Everything acknowledged before the kill is back.
  if (!backend->get(key("fill/%08d", 0)).value().has_value()) {
    throw std::runtime_error("the filled data did not survive the kill");
  }
  return ms;
}

// The subjects of the process-durability rows and, with fsync rows, of the fsync ones
// (memory has no fsync cost to show).
struct Subjects {
  // "dorm rocksdb" keeps the default free-space reserve (checked before every commit);
  // "reserve=0" checks nothing, so the two tell what the check costs.
  std::vector<std::string> names = {"raw rocksdb", "dorm rocksdb", "dorm rocksdb reserve=0",
                                    "dorm sqlite", "dorm memory"};
  std::vector<std::unique_ptr<Subject>> process;
  std::vector<std::string> fsync_names = {"raw rocksdb", "dorm rocksdb", "dorm rocksdb reserve=0",
                                          "dorm sqlite"};
  std::vector<std::unique_ptr<Subject>> fsync;
};

std::unique_ptr<Subject> without_reserve(const fs::path& path, Durability durability) {
  storage::RocksDbBackend::Tuning tuning;
  tuning.reserve.bytes = 0;  // no reserve: never refused for space
  return std::make_unique<ThroughBackend>(must(storage::RocksDbBackend::open(
      path.string(), durability, storage::OpenMode::read_write, tuning)));
}

void open_subjects(Subjects& out, const fs::path& root, bool fsync_rows) {
  out.process.push_back(std::make_unique<RawRocksDb>((root / "raw").string(), Durability::process));
  out.process.push_back(std::make_unique<ThroughBackend>(
      must(storage::RocksDbBackend::open((root / "rocksdb").string(), Durability::process))));
  out.process.push_back(without_reserve(root / "rocksdb-no-reserve", Durability::process));
  out.process.push_back(std::make_unique<ThroughBackend>(
      must(storage::SqliteBackend::open((root / "sqlite.db").string(), Durability::process))));
  out.process.push_back(
      std::make_unique<ThroughBackend>(std::make_unique<storage::MemoryBackend>()));
  if (fsync_rows) {
    out.fsync.push_back(
        std::make_unique<RawRocksDb>((root / "raw-fsync").string(), Durability::fsync));
    out.fsync.push_back(std::make_unique<ThroughBackend>(
        must(storage::RocksDbBackend::open((root / "rocksdb-fsync").string(), Durability::fsync))));
    out.fsync.push_back(without_reserve(root / "rocksdb-no-reserve-fsync", Durability::fsync));
    out.fsync.push_back(std::make_unique<ThroughBackend>(must(
        storage::SqliteBackend::open((root / "sqlite-fsync.db").string(), Durability::fsync))));
  }
}

// Identical inputs for every subject: precomputed keys and random sequences.
struct Inputs {
  std::vector<std::string> get_keys, scan_prefixes;
  std::string value = std::string(kValueBytes, 'w');
};

Inputs make_inputs(int ops) {
  Inputs in;
  std::mt19937 rng(42);
  for (int i = 0; i < ops; ++i) {
    in.get_keys.push_back(key("g/%08d", std::uniform_int_distribution<int>(0, kGetKeys - 1)(rng)));
    in.scan_prefixes.push_back(
        key("s/%06d/", std::uniform_int_distribution<int>(0, kScanPrefixes - 1)(rng)));
  }
  return in;
}

Row put_row(int batch_size, bool fsync, int ops, const std::string& value) {
  // fsync rows wait for the disk at every commit: fewer commits, same for every subject.
  int commits = fsync ? std::max(ops / 20, 10) : std::max(ops / batch_size, 1000);
  int puts = commits * batch_size;
  std::vector<Pairs> batches;
  for (int i = 0; i < puts; i += batch_size) {
    Pairs b;
    for (int j = i; j < i + batch_size; ++j) b.emplace_back(key("w%d/%08d", batch_size, j), value);
    batches.push_back(std::move(b));
  }
  int n = static_cast<int>(batches.size());
  return Row{"put, batch of " + std::to_string(batch_size) + (fsync ? " (fsync)" : ""), "commits/s",
             fsync, n, [batches = std::move(batches)](Subject& s, int i) {
               s.commit(batches[static_cast<std::size_t>(i)]);
             }};
}

// The rows in table order; the get and scan rows read `in`, which must outlive them.
std::vector<Row> make_rows(const StorageBenchOptions& options, const Inputs& in) {
  std::vector<Row> rows;
  for (int b : {1, 10, 100}) rows.push_back(put_row(b, false, options.ops, in.value));
  rows.push_back(Row{"point get", "gets/s", false, options.ops, [&in](Subject& s, int i) {
                       std::string v;
                       if (!s.get(in.get_keys[static_cast<std::size_t>(i)], v)) {
                         throw std::runtime_error("a prefilled key is missing");
                       }
                     }});
  rows.push_back(Row{"prefix scan, 100 keys", "scans/s", false, std::max(options.ops / 10, 1),
                     [&in](Subject& s, int i) {
                       if (s.scan_prefix(in.scan_prefixes[static_cast<std::size_t>(i)]) !=
                           kScanWidth) {
                         throw std::runtime_error("a prefix scan returned the wrong count");
                       }
                     }});
  if (options.fsync_rows) {
    for (int b : {1, 10, 100}) rows.push_back(put_row(b, true, options.ops, in.value));
  }
  return rows;
}

using Results = std::map<std::pair<std::string, std::string>, std::vector<double>>;

// Runs every row over its subjects, round by round; adds each one's ops/s to `results`.
void run_rounds(const std::vector<Row>& rows, Subjects& subjects, int rounds, Results& results) {
  for (int round = 1; round <= rounds; ++round) {
    std::printf("round %d/%d\n", round, rounds);
    std::fflush(stdout);
    for (const auto& row : rows) {
      auto& set_names = row.fsync ? subjects.fsync_names : subjects.names;
      auto& set = row.fsync ? subjects.fsync : subjects.process;
      std::vector<double> seconds(set.size(), 0.0);
      for (int slice = 0; slice < kSlices; ++slice) {
        int begin = row.count * slice / kSlices;
        int end = row.count * (slice + 1) / kSlices;
        // Rotate the starting subject so none always runs first.
        for (std::size_t k = 0; k < set.size(); ++k) {
          std::size_t i = (k + static_cast<std::size_t>(round + slice)) % set.size();
          auto start = std::chrono::steady_clock::now();
          for (int op = begin; op < end; ++op) row.op(*set[i], op);
          seconds[i] += seconds_since(start);
        }
      }
      for (std::size_t i = 0; i < set.size(); ++i) {
        results[{row.name, set_names[i]}].push_back(row.count / seconds[i]);
      }
    }
  }
}

void print_open_after_kill(const fs::path& root) {
  std::vector<double> opens;
  for (int i = 0; i < 3; ++i) {
    opens.push_back(open_after_kill_ms((root / ("killed-" + std::to_string(i))).string()));
  }
  std::printf(
      "\nrocksdb open after SIGKILL with a full memtable (~56 MiB in the WAL): "
      "median %.0f ms of 3 (%.0f, %.0f, %.0f)\n",
      median(opens), opens[0], opens[1], opens[2]);
}

}  // namespace

int storage_bench_fill_and_wait(const std::string& dir) {
  auto backend = must(storage::RocksDbBackend::open(dir, Durability::process));
  // ~56 MiB of payload: close to the 64 MiB write buffer without triggering a flush, so
  // all of it lives only in the memtable and the WAL when the kill comes.
  std::string value(1024, 'f');
  for (int i = 0; i < 56 * 1024; i += 100) {
    storage::WriteBatch batch;
    for (int j = i; j < i + 100; ++j) batch.put(key("fill/%08d", j), value);
    if (!backend->commit(batch)) return 1;
  }
  std::printf("filled\n");
  std::fflush(stdout);
  pause();  // until SIGKILL
  return 0;
}

namespace {

// The backends table and the open-after-kill figure.
void run_backends(const StorageBenchOptions& options, const fs::path& root) {
  Subjects subjects;
  open_subjects(subjects, root, options.fsync_rows);

  std::printf("prefilling %d keys and %d prefixes x %d keys per subject...\n", kGetKeys,
              kScanPrefixes, kScanWidth);
  for (auto& s : subjects.process) prefill(*s);
  static_cast<RawRocksDb&>(*subjects.process[0]).flush();
  for (std::size_t i : {1, 2}) {
    if (auto* rocks = dynamic_cast<storage::RocksDbBackend*>(
            &static_cast<ThroughBackend&>(*subjects.process[i]).backend())) {
      rocks->db().Flush(rocksdb::FlushOptions());  // every RocksDB subject reads from tables
    }
  }

  Inputs inputs = make_inputs(options.ops);
  std::vector<Row> rows = make_rows(options, inputs);
  Results results;
  run_rounds(rows, subjects, options.rounds, results);
  print_table(rows, subjects.names, results);

  if (options.open_after_kill) print_open_after_kill(root);
  subjects.process.clear();
  subjects.fsync.clear();
}

// The PostgreSQL table: dorm's postgres backend against the same statements over plain
// libpq, each on a fresh table of the database `uri` names.
void run_postgres(const StorageBenchOptions& options) {
  auto uri = must(storage::parse_storage_uri(options.postgres));
  if (uri.scheme != storage::Scheme::postgres) {
    throw std::runtime_error("--postgres takes a postgres:// URI");
  }
  auto settings = must(storage::PostgresBackend::settings_from(uri));
  Subjects subjects;
  subjects.names = {"raw libpq", "dorm postgres", "dorm leased"};
  subjects.process.push_back(std::make_unique<RawPostgres>(settings.conninfo, "dorm_bench_raw"));
  // Empty tables for dorm's two subjects.
  { RawLibpq fresh(settings.conninfo, "dorm_bench_dorm", false); }
  { RawLibpq fresh(settings.conninfo, "dorm_bench_leased", false); }
  const std::string joiner = options.postgres.find('?') == std::string::npos ? "?" : "&";
  subjects.process.push_back(std::make_unique<ThroughBackend>(
      must(storage::open_backend(options.postgres + joiner + "table=dorm_bench_dorm"))));
  // As a node of a shared store commits: each batch under its object's lease.
  subjects.process.push_back(std::make_unique<LeasedBackend>(
      must(storage::open_backend(options.postgres + joiner + "table=dorm_bench_leased&shared=true"))));
  std::printf("\npostgres (%s): prefilling %d keys and %d prefixes x %d keys per subject...\n",
              subjects.process[1]->get_description().c_str(), kGetKeys, kScanPrefixes, kScanWidth);
  for (auto& s : subjects.process) prefill(*s);
  Inputs inputs = make_inputs(options.ops);
  StorageBenchOptions no_fsync = options;
  no_fsync.fsync_rows = false;  // durability is the server's synchronous_commit for both
  std::vector<Row> rows = make_rows(no_fsync, inputs);
  Results results;
  run_rounds(rows, subjects, options.rounds, results);
  print_table(rows, subjects.names, results);
}

}  // namespace

int run_storage_bench(const StorageBenchOptions& options) {
  fs::path root = options.dir.empty()
                      ? fs::temp_directory_path() / ("dorm-bench-" + std::to_string(getpid()))
                      : fs::path(options.dir);
  fs::remove_all(root);
  fs::create_directories(root);
  std::printf("dorm bench storage: %d rounds, %d ops per row, data in %s\n", options.rounds,
              options.ops, root.c_str());
  if (options.backend_rows) run_backends(options, root);
  if (options.settings_rows) run_storage_settings_bench(root, options.rounds);
  if (!options.postgres.empty()) run_postgres(options);
  fs::remove_all(root);
  return 0;
}

}  // namespace dorm::bench
