// `dorm bench storage`, second table: candidate RocksDB settings under the write-then-delete
// churn of an MCP server's keys, each measured against dorm's own options.
//
// The keys follow a session's pattern: per object, one live key ("o/<n>/m") and a journal
// prefix ("o/<n>/j/") where each call writes a record in one commit and deletes it in the
// next, so every listing of the prefix finds nothing but steps over the tombstones of the
// calls before it. Setup, the same for every subject: 1,000 objects x 200 calls, flushed
// to a table file, then up to 60 s for background compactions to finish (the figure is
// printed). Then, per round and slice, subjects alternating: more calls (commits/s, the
// write side of each setting), listings of random objects' journal prefixes (scans/s, all
// empty), gets of deleted and of live keys. Subjects are raw RocksDB databases opened with
// RocksDbBackend::make_options plus one setting each, read as RocksDbBackend::scan reads
// (iterate bounds on both sides); a setting earns its place in make_options only if a row
// here shows it.
#include <rocksdb/db.h>
#include <rocksdb/utilities/table_properties_collectors.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "storage_bench.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;

constexpr int kObjects = 1'000;
constexpr int kSetupCalls = 200;  // per object, flushed before measuring
constexpr int kSlices = 10;
constexpr int kCallsPerSlice = 2'000;  // across objects, per subject and slice
constexpr int kReadsPerSlice = 5'000;  // scans, and gets of each kind

struct Candidate {
  std::string name;
  std::function<void(rocksdb::Options&)> apply;
};

std::vector<Candidate> candidates() {
  return {
      {"dorm options", [](rocksdb::Options&) {}},
      {"+ compact on deletion (128, 64)",
       [](rocksdb::Options& o) {
         // A table file with 64 deletions in any 128 consecutive entries is compacted
         // at once instead of waiting for level 0 to fill.
         o.table_properties_collector_factories.push_back(
             rocksdb::NewCompactOnDeletionCollectorFactory(128, 64));
       }},
      {"+ memtable whole-key bloom (2 %)",
       [](rocksdb::Options& o) {
         o.memtable_prefix_bloom_size_ratio = 0.02;
         o.memtable_whole_key_filtering = true;
       }},
  };
}

std::string object_key(int object, const char* rest) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "o/%06d/%s", object, rest);
  return buf;
}

std::string journal_key(int object, int call) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "o/%06d/j/%08d", object, call);
  return buf;
}

class Subject {
 public:
  Subject(const fs::path& dir, const Candidate& candidate) {
    auto options = storage::RocksDbBackend::make_options({});
    candidate.apply(options);
    rocksdb::DB* raw = nullptr;
    auto status = rocksdb::DB::Open(options, dir.string(), &raw);
    if (!status.ok()) throw std::runtime_error(status.ToString());
    db_.reset(raw);
    write_ = storage::RocksDbBackend::make_write_options(storage::Durability::process);
  }

  // One call of `object`: its journal record written, then deleted in a second commit.
  void call(int object, int n) {
    auto key = journal_key(object, n);
    check(db_->Put(write_, key, "record"));
    check(db_->Delete(write_, key));
  }
  void put_live(int object) { check(db_->Put(write_, object_key(object, "m"), "meta")); }
  std::size_t list_journal(int object) {
    std::string lower = object_key(object, "j/"), upper = object_key(object, "j0");
    rocksdb::Slice lo(lower), hi(upper);
    rocksdb::ReadOptions read;
    read.iterate_lower_bound = &lo;
    read.iterate_upper_bound = &hi;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
    std::size_t n = 0;
    for (it->Seek(lo); it->Valid(); it->Next()) ++n;
    check(it->status());
    return n;
  }
  bool get(const std::string& key) {
    std::string value;
    auto status = db_->Get(rocksdb::ReadOptions(), key, &value);
    if (!status.ok() && !status.IsNotFound()) throw std::runtime_error(status.ToString());
    return status.ok();
  }
  void flush() { check(db_->Flush(rocksdb::FlushOptions())); }
  // Waits (at most `limit`) until no compaction is pending or running; the seconds taken.
  double settle(std::chrono::seconds limit) {
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < limit) {
      std::uint64_t pending = 0, running = 0;
      db_->GetIntProperty("rocksdb.compaction-pending", &pending);
      db_->GetIntProperty("rocksdb.num-running-compactions", &running);
      if (pending == 0 && running == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return seconds_since(start);
  }
  std::string files() {
    std::string out;
    db_->GetProperty("rocksdb.num-files-at-level0", &out);
    std::string l1;
    db_->GetProperty("rocksdb.num-files-at-level1", &l1);
    return "L0 " + out + ", L1 " + l1;
  }

 private:
  static void check(const rocksdb::Status& s) {
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_;
};

struct Row {
  std::string name, unit;
  std::vector<std::vector<double>> per_subject;  // ops/s, one per round
};

// The same churn in every subject, flushed, then background compactions given time.
void set_up(std::vector<std::unique_ptr<Subject>>& subjects, const std::vector<Candidate>& cands) {
  std::printf("\nsettings: %d objects x %d calls of write/delete churn per subject...\n", kObjects,
              kSetupCalls);
  std::fflush(stdout);
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    auto& s = *subjects[i];
    for (int o = 0; o < kObjects; ++o) s.put_live(o);
    for (int c = 0; c < kSetupCalls; ++c) {
      for (int o = 0; o < kObjects; ++o) s.call(o, c);
    }
    s.flush();
    double settled = s.settle(std::chrono::seconds(60));
    std::printf("  %s: flushed, compactions done %.2f s later (%s)\n", cands[i].name.c_str(),
                settled, s.files().c_str());
  }
}

// One round: every row in slices, subjects alternating; adds each subject's ops/s to `rows`.
void run_round(std::vector<std::unique_ptr<Subject>>& subjects, std::vector<Row>& rows, int round,
               std::mt19937& rng, int& next_call) {
  std::vector<std::vector<double>> seconds(rows.size(), std::vector<double>(subjects.size()));
  auto timed = [](double& total, auto&& work) {
    auto t = std::chrono::steady_clock::now();
    work();
    total += seconds_since(t);
  };
  for (int slice = 0; slice < kSlices; ++slice) {
    std::vector<int> objects(kReadsPerSlice), calls(kReadsPerSlice);
    for (auto& o : objects) o = std::uniform_int_distribution<int>(0, kObjects - 1)(rng);
    for (auto& c : calls) c = std::uniform_int_distribution<int>(0, next_call - 1)(rng);
    for (std::size_t k = 0; k < subjects.size(); ++k) {
      std::size_t i = (k + static_cast<std::size_t>(round + slice)) % subjects.size();
      auto& s = *subjects[i];
      timed(seconds[0][i], [&] {
        for (int n = 0; n < kCallsPerSlice; ++n) s.call(n % kObjects, next_call + n / kObjects);
      });
      timed(seconds[1][i], [&] {
        for (int o : objects) {
          if (s.list_journal(o) != 0) throw std::runtime_error("a journal listing found a record");
        }
      });
      timed(seconds[2][i], [&] {
        for (int n = 0; n < kReadsPerSlice; ++n) {
          if (s.get(journal_key(objects[n], calls[n])))
            throw std::runtime_error("a deleted key is back");
        }
      });
      timed(seconds[3][i], [&] {
        for (int o : objects) {
          if (!s.get(object_key(o, "m"))) throw std::runtime_error("a live key is missing");
        }
      });
    }
    next_call += kCallsPerSlice / kObjects;
  }
  const double counts[] = {double{kSlices} * kCallsPerSlice, double{kSlices} * kReadsPerSlice,
                           double{kSlices} * kReadsPerSlice, double{kSlices} * kReadsPerSlice};
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < subjects.size(); ++i) {
      rows[r].per_subject[i].push_back(counts[r] / seconds[r][i]);
    }
  }
}

void print_rows(const std::vector<Row>& rows, const std::vector<Candidate>& cands) {
  std::printf("\n| row | unit |");
  for (const auto& c : cands) std::printf(" %s | ratio |", c.name.c_str());
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < cands.size(); ++i) std::printf("---:|---:|");
  std::printf("\n");
  for (const auto& r : rows) {
    std::printf("| %s | %s |", r.name.c_str(), r.unit.c_str());
    for (std::size_t i = 0; i < cands.size(); ++i) {
      // The ratio is the median of the rounds' own ratios against dorm's options.
      std::vector<double> ratios;
      for (std::size_t k = 0; k < r.per_subject[i].size(); ++k) {
        ratios.push_back(r.per_subject[i][k] / r.per_subject[0][k]);
      }
      std::printf(" %.0f | %.2f |", median(r.per_subject[i]), median(ratios));
    }
    std::printf("\n");
  }
}

}  // namespace

void run_storage_settings_bench(const fs::path& root, int rounds) {
  auto cands = candidates();
  std::vector<std::unique_ptr<Subject>> subjects;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    fs::path dir = root / ("settings-" + std::to_string(i));
    fs::remove_all(dir);
    subjects.push_back(std::make_unique<Subject>(dir, cands[i]));
  }
  set_up(subjects, cands);
  std::vector<Row> rows = {
      {"write/delete churn, one call = 2 commits", "calls/s", {}},
      {"list an object's journal prefix (empty, over tombstones)", "scans/s", {}},
      {"get of a deleted key", "gets/s", {}},
      {"get of a live key", "gets/s", {}},
  };
  for (auto& r : rows) r.per_subject.resize(subjects.size());
  std::mt19937 rng(7);
  int next_call = kSetupCalls;
  for (int round = 1; round <= rounds; ++round) {
    run_round(subjects, rows, round, rng, next_call);
    std::printf("settings round %d/%d\n", round, rounds);
    std::fflush(stdout);
  }
  print_rows(rows, cands);
  subjects.clear();
  for (std::size_t i = 0; i < cands.size(); ++i) {
    fs::remove_all(root / ("settings-" + std::to_string(i)));
  }
}

}  // namespace dorm::bench
