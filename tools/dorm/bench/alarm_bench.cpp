// `dorm bench runtime`, alarms: lateness under a large index, and re-arming at start.
//
// Setup (once): a RocksDB store gets N pending alarms (default 1,000,000): N / 100
// objects each set 100 named alarms in one turn, due a day from now and spread at the
// measured rate, interleaved across objects. The store is then flushed and compacted.
//
// Re-arm at start (each round): the store is opened again, and the time from
// Runtime::start to the end of the scheduler's first read of the alarm index is taken
// (the timer for the earliest alarm is armed right after that read, with no further I/O),
// through a Backend decorator that notes when the alarm index is first scanned. The same
// is measured over an empty store as a reference, and again at the end, once the lateness
// rounds' alarms were delivered (their deleted index entries not yet compacted away).
//
// Lateness (each round): with the N alarms still pending, fresh objects set rate x window
// more alarms, due in a window that starts a little after they are set, at the given rate
// per second (interleaved across objects), on the system clock. Every delivery records
// AlarmInfo::actual_ms - scheduled_ms (and the same at microsecond resolution); the round
// ends when all have fired. A Backend decorator counts the scheduler's reads of the alarm
// index meanwhile (how often delivering reached the store).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "alarm_scan_count.hpp"
#include "bench_stats.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "request_pipeline.hpp"
#include "runtime_bench_parts.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

constexpr int kAlarmsPerObject = 100;
// Pending alarms are due this far in the future: none of them fires while measuring.
constexpr std::int64_t kPendingDelayMs = 24 * 3600 * 1000;

using set_alarms_atom = caf::atom_constant<caf::atom("setalarms")>;

std::int64_t system_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the deliveries of one round recorded.
struct AlarmLog {
  std::mutex mutex;
  std::vector<double> late_ms;  // AlarmInfo: actual_ms - scheduled_ms
  std::vector<double> late_us;  // system clock at on_alarm (us) - scheduled time
  std::atomic<int> fired{0};
  std::atomic<int> unexpected{0};  // a pending (far-future) alarm fired
  std::int64_t pending_from_ms = 0;

  void record(const AlarmInfo& info, std::int64_t now_us) {
    if (info.scheduled_ms >= pending_from_ms) {
      unexpected.fetch_add(1);
      return;
    }
    {
      std::lock_guard lock(mutex);
      late_ms.push_back(static_cast<double>(info.actual_ms - info.scheduled_ms));
      late_us.push_back(static_cast<double>(now_us - info.scheduled_ms * 1000));
    }
    fired.fetch_add(1);
  }
};

// set_alarms(base, object, objects, rate): sets 100 alarms, the a-th due at
// base + (a * objects + object) / rate seconds, so consecutive due times go to
// consecutive objects.
class AlarmedObject : public DurableObject {
 public:
  explicit AlarmedObject(AlarmLog* log) : log_(log) {}
  caf::behavior behavior() override {
    return {[this](set_alarms_atom, std::int64_t base_ms, int object, int objects, int rate) {
      for (int a = 0; a < kAlarmsPerObject; ++a) {
        std::int64_t index = std::int64_t{a} * objects + object;
        must(set_alarm(numbered("a", a), base_ms + index * 1000 / rate));
      }
      return kAlarmsPerObject;
    }};
  }
  void on_alarm(const AlarmInfo& info) override { log_->record(info, system_now_us()); }

 private:
  AlarmLog* log_;
};

// Notes when the alarm index is first scanned, and how many entries that scan returned.
class IndexWatch final : public storage::BackendWrapper {
 public:
  explicit IndexWatch(storage::Backend& target)
      : storage::BackendWrapper(target), prefix_(keys::index_prefix(keys::kAlarmIndex)) {}

  Result<std::vector<storage::KeyValue>> scan(const storage::ScanOptions& options) override {
    auto rows = storage::BackendWrapper::scan(options);
    if (options.start.starts_with(prefix_) && first_scan_ns_.load() == 0) {
      entries_ = rows ? rows->size() : 0;
      first_scan_ns_.store(Steady::now().time_since_epoch().count());
    }
    return rows;
  }

  // Waits (at most 10 s) for the first alarm index scan; returns when it ended.
  Steady::time_point wait_first_scan() const {
    auto deadline = Steady::now() + std::chrono::seconds(10);
    while (first_scan_ns_.load() == 0) {
      if (Steady::now() > deadline) {
        throw std::runtime_error("the alarm scheduler never read its index");
      }
      std::this_thread::yield();
    }
    return Steady::time_point(Steady::duration(first_scan_ns_.load()));
  }
  std::size_t entries() const { return entries_; }

 private:
  std::string prefix_;
  std::atomic<Steady::rep> first_scan_ns_{0};
  std::size_t entries_ = 0;  // written before first_scan_ns_ is published
};

std::unique_ptr<storage::RocksDbBackend> open_store(const fs::path& dir) {
  return must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
}

// Entries of the alarm index, counted without materialising them.
std::size_t count_pending_alarms(storage::RocksDbBackend& backend) {
  std::string prefix = keys::index_prefix(keys::kAlarmIndex);
  std::string end = *storage::ScanOptions::prefix_successor(prefix);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(backend.db().NewIterator(read));
  std::size_t n = 0;
  for (it->Seek(prefix); it->Valid(); it->Next()) ++n;
  return n;
}

void register_alarmed(Runtime& runtime, AlarmLog* log) {
  must(runtime.register_namespace("alarmed",
                                  [log] { return std::make_unique<AlarmedObject>(log); }));
}

// Objects `name_prefix`0 .. `objects`-1 each set their 100 alarms from `base_ms`.
void set_alarms(Runtime& runtime, const std::string& name_prefix, int objects, std::int64_t base_ms,
                int rate, int window) {
  RequestPipeline(
      runtime,
      [&](int o) {
        std::string name = name_prefix;
        name += std::to_string(o);
        return must(runtime.get(runtime.id_from_name("alarmed", name)));
      },
      [&](int o) { return caf::make_message(set_alarms_atom::value, base_ms, o, objects, rate); },
      0, objects)
      .run(window);
}

struct StartTimes {
  double open_ms, start_ms, armed_ms;
  std::size_t entries;
};

// Opens the store at `dir` afresh and starts a runtime over it.
StartTimes time_start(const RuntimeBenchOptions& o, const fs::path& dir) {
  auto before_open = Steady::now();
  auto backend = open_store(dir);
  StartTimes t{};
  t.open_ms = seconds_since(before_open) * 1000;
  IndexWatch watch(*backend);
  auto before_start = Steady::now();
  auto runtime = start_runtime(watch, o.workers);
  t.start_ms = seconds_since(before_start) * 1000;
  t.armed_ms =
      std::chrono::duration<double, std::milli>(watch.wait_first_scan() - before_start).count();
  t.entries = watch.entries();
  runtime->shutdown();
  return t;
}

// Setup: `pending_objects` objects each set kAlarmsPerObject alarms due a day from now;
// then the store is flushed and compacted, and an empty store made beside it.
void store_pending_alarms(const RuntimeBenchOptions& o, const fs::path& dir, int pending_objects,
                          AlarmLog& log, AlarmFigures& out) {
  {
    std::printf("alarms: storing %d pending alarms (%d objects x %d)...\n", out.pending,
                pending_objects, kAlarmsPerObject);
    std::fflush(stdout);
    auto backend = open_store(dir / "pending");
    auto runtime = start_runtime(*backend, o.workers);
    register_alarmed(*runtime, &log);
    std::int64_t base = runtime->clock().now_ms() + kPendingDelayMs;
    log.pending_from_ms = base;
    auto start = Steady::now();
    set_alarms(*runtime, "b", pending_objects, base, o.alarm_rate, o.in_flight);
    out.set_seconds = seconds_since(start);
    std::printf("alarms: stored in %.1f s; flushing and compacting...\n", out.set_seconds);
    std::fflush(stdout);
    runtime->shutdown();
    backend->db().Flush(rocksdb::FlushOptions());
    backend->db().CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);
    auto pending = count_pending_alarms(*backend);
    if (pending != static_cast<std::size_t>(out.pending)) {
      throw std::runtime_error("expected " + std::to_string(out.pending) +
                               " pending alarms, found " + std::to_string(pending));
    }
  }
  {
    auto empty = open_store(dir / "empty");
    start_runtime(*empty, o.workers)->shutdown();  // a store with runtime metadata, no alarms
  }
}

// Re-arm at start, each round, over the pending alarms and over the empty store.
void time_starts(const RuntimeBenchOptions& o, const fs::path& dir, AlarmFigures& out) {
  for (int round = 1; round <= o.rounds; ++round) {
    StartTimes full = time_start(o, dir / "pending");
    StartTimes empty = time_start(o, dir / "empty");
    out.open_ms.push_back(full.open_ms);
    out.start_ms.push_back(full.start_ms);
    out.armed_ms.push_back(full.armed_ms);
    out.empty_open_ms.push_back(empty.open_ms);
    out.empty_start_ms.push_back(empty.start_ms);
    out.empty_armed_ms.push_back(empty.armed_ms);
    out.index_entries_read = full.entries;
    std::printf(
        "round %d/%d, start over %d alarms: open %.1f ms, start %.1f ms, first timer "
        "armed %.1f ms (empty store: %.1f, %.1f, %.1f)\n",
        round, o.rounds, out.pending, full.open_ms, full.start_ms, full.armed_ms, empty.open_ms,
        empty.start_ms, empty.armed_ms);
    std::fflush(stdout);
  }
}

// Waits until `firing` alarms fired; returns for about how many ms RocksDB flushed or
// compacted in the background once the window opened (sampled while waiting: on two cores
// that work competes with the CAF workers).
int wait_for_window(Runtime& runtime, storage::RocksDbBackend& backend, AlarmLog& log, int firing,
                    std::int64_t window_start, Steady::time_point deadline) {
  constexpr int kSampleMs = 20;
  int background_ms = 0;
  while (log.fired.load() < firing) {
    if (Steady::now() > deadline) {
      throw std::runtime_error("only " + std::to_string(log.fired.load()) + " of " +
                               std::to_string(firing) + " alarms fired");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kSampleMs));
    std::uint64_t flushes = 0, compactions = 0;
    backend.db().GetIntProperty(rocksdb::DB::Properties::kNumRunningFlushes, &flushes);
    backend.db().GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &compactions);
    if (runtime.clock().now_ms() >= window_start && flushes + compactions > 0) {
      background_ms += kSampleMs;
    }
  }
  return background_ms;
}

// One lateness round: fresh objects set the window's alarms, `lead_ms` before it opens.
void lateness_round(const RuntimeBenchOptions& o, storage::RocksDbBackend& backend, AlarmLog& log,
                    int round, int firing_objects, std::int64_t lead_ms, AlarmFigures& out) {
  {
    std::lock_guard lock(log.mutex);
    log.late_ms.clear();
    log.late_us.clear();
  }
  log.fired.store(0);
  AlarmScanCount counted(backend);
  auto runtime = start_runtime(counted, o.workers);
  register_alarmed(*runtime, &log);
  std::int64_t window_start = runtime->clock().now_ms() + lead_ms;
  auto set_start = Steady::now();
  set_alarms(*runtime, numbered("f", round) + "-", firing_objects, window_start, o.alarm_rate,
             o.in_flight);
  double set_seconds = seconds_since(set_start);
  if (runtime->clock().now_ms() >= window_start) {
    throw std::runtime_error("setting the window's alarms took " + std::to_string(set_seconds) +
                             " s, longer than the lead time of " + std::to_string(lead_ms) + " ms");
  }
  auto deadline = Steady::now() + std::chrono::milliseconds(lead_ms) +
                  std::chrono::seconds(o.alarm_window_s + 60);
  const std::uint64_t scans_before = counted.scans();
  int background_ms = wait_for_window(*runtime, backend, log, out.firing, window_start, deadline);
  const std::uint64_t scans = counted.scans() - scans_before;
  runtime->shutdown();
  if (log.unexpected.load() > 0) throw std::runtime_error("a pending alarm fired early");
  std::lock_guard lock(log.mutex);
  out.late_p50.push_back(percentile(log.late_ms, 50));
  out.late_p99.push_back(percentile(log.late_ms, 99));
  out.late_max.push_back(percentile(log.late_ms, 100));
  out.late_p50_us.push_back(percentile(log.late_us, 50) / 1000);
  out.late_p99_us.push_back(percentile(log.late_us, 99) / 1000);
  out.late_max_us.push_back(percentile(log.late_us, 100) / 1000);
  out.window_scans.push_back(static_cast<double>(scans));
  std::printf(
      "round %d/%d, %d alarms due at %d/s with %d pending: lateness p50 %.0f ms, "
      "p99 %.0f ms (%.3f ms), max %.0f ms; RocksDB flushing or compacting for ~%d ms of it; "
      "%llu alarm index scans\n",
      round, o.rounds, out.firing, o.alarm_rate, out.pending, out.late_p50.back(),
      out.late_p99.back(), out.late_p99_us.back(), out.late_max.back(), background_ms,
      static_cast<unsigned long long>(scans));
  std::fflush(stdout);
}

// Start again now that the rounds' alarms were delivered: their index entries are
// deleted but, until a compaction drops them, the first scan of a start steps over them.
void time_starts_after_delivery(const RuntimeBenchOptions& o, const fs::path& dir,
                                AlarmFigures& out) {
  out.delivered = o.rounds * out.firing;
  for (int round = 1; round <= o.rounds; ++round) {
    StartTimes t = time_start(o, dir / "pending");
    out.delivered_open_ms.push_back(t.open_ms);
    out.delivered_start_ms.push_back(t.start_ms);
    out.delivered_armed_ms.push_back(t.armed_ms);
    std::printf(
        "round %d/%d, start over %d alarms after %d deliveries: open %.1f ms, start %.1f "
        "ms, first timer armed %.1f ms\n",
        round, o.rounds, out.pending, out.delivered, t.open_ms, t.start_ms, t.armed_ms);
    std::fflush(stdout);
  }
}

}  // namespace

AlarmFigures bench_alarms(const RuntimeBenchOptions& o, const fs::path& dir) {
  AlarmFigures out;
  fs::remove_all(dir);
  fs::create_directories(dir / "pending");
  fs::create_directories(dir / "empty");
  const int pending_objects = std::max(1, o.alarms / kAlarmsPerObject);
  out.pending = pending_objects * kAlarmsPerObject;
  const int firing_objects = std::max(1, o.alarm_rate * o.alarm_window_s / kAlarmsPerObject);
  out.firing = firing_objects * kAlarmsPerObject;
  AlarmLog log;
  store_pending_alarms(o, dir, pending_objects, log, out);
  time_starts(o, dir, out);

  // Lead time before the window opens: setting the window's alarms must be done by then.
  const double seconds_per_alarm = out.set_seconds / out.pending;
  const auto lead_ms = static_cast<std::int64_t>(1000 + 3000 * seconds_per_alarm * out.firing);
  auto backend = open_store(dir / "pending");
  for (int round = 1; round <= o.rounds; ++round) {
    lateness_round(o, *backend, log, round, firing_objects, lead_ms, out);
  }
  backend.reset();

  time_starts_after_delivery(o, dir, out);
  fs::remove_all(dir);
  return out;
}

}  // namespace dorm::bench
