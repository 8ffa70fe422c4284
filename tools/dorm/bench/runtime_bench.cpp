// `dorm bench runtime` — what the durable-object runtime costs over bare CAF.
//
// The parts, each in its own file, all run from here and printed as tables:
//
// - Round trips (this file): requests per second to 1, 100, 10,000 and 100,000 objects, K
//   requests in flight. Baseline: a bare CAF client actor pipelining request(...).then(...) to as
//   many stateless CAF actors. Subject: Runtime::request to as many durable objects whose
//   handler writes nothing (a turn without writes commits nothing), over MemoryBackend.
//   Same CAF worker count for both; both systems are alive during a round and run in
//   alternating slices, so a slow stretch of the machine lands on both alike.
// - Idle memory (this file): RSS growth per idle resident object, 100,000 dorm objects
//   (each read a little state in on_start, answered one request, no idle timeout) against
//   as many bare caf::stateful_actor with a comparable state, in the same process; and
//   the same objects setting that state without reading storage.
// - Idle sessions (idle_session_bench.cpp): RSS per resident idle MCP session, 100,000
//   of them, with and without the storage cache.
// - Cold activation (cold_activation_bench.cpp): send-to-reply latency of activating an
//   object whose on_start reads 3 keys from a freshly opened RocksDB database.
// - Alarms (alarm_bench.cpp): lateness with 1,000,000 alarms pending while 10,000/s come
//   due, and the time from Runtime::start to the scheduler's first armed timer.
// - Storage cache (storage_cache_bench.cpp): a listing under write/delete churn and an MCP
//   tools/call, with and without the object storage cache.
// - Alarm re-arms (rearm_bench.cpp): re-arms/s of 1,000 objects' alarms over 10,000 and
//   100,000 re-arms, against the same turns writing a key instead.
#include "runtime_bench.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <tuple>

#include "bench_stats.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "request_pipeline.hpp"
#include "runtime_bench_parts.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;

// Each round runs a row in this many slices, subjects alternating slice by slice, so a
// busy moment of the machine lands on both subjects.
constexpr int kSlices = 20;
// The state each idle object holds: long enough to live on the heap in both subjects.
constexpr std::size_t kStateBytes = 32;

// ---- bare CAF ----

// A stateless actor that answers ping(x) with x. (Actors here are classes: CAF 0.17's
// function-based spawn binds a reference to a null argument tuple, which UBSan reports.)
class EchoActor : public caf::event_based_actor {
 public:
  using caf::event_based_actor::event_based_actor;
  caf::behavior make_behavior() override {
    return {[](ping_atom, int x) { return x; }};
  }
};

// Keeps `window` requests in flight to `targets` (round robin from index `first`) until
// `count` were answered, then fulfils `done` and quits.
class RawClient : public caf::event_based_actor {
 public:
  RawClient(caf::actor_config& cfg, const std::vector<caf::actor>* targets, int first, int count,
            int window, std::promise<void>* done)
      : caf::event_based_actor(cfg),
        targets_(*targets),
        first_(first),
        count_(count),
        window_(window),
        done_(done) {}

  caf::behavior make_behavior() override {
    for (int i = 0; i < window_ && sent_ < count_; ++i) send_next();
    // Replies arrive through then(); a behavior keeps the actor alive meanwhile.
    return {[](ping_atom) {}};
  }

 private:
  void send_next() {
    int i = first_ + sent_++;
    const auto& target = targets_[static_cast<std::size_t>(i) % targets_.size()];
    request(target, caf::infinite, ping_atom::value, i)
        .then([this](int) { on_reply(); },
              [this](caf::error& e) {
                done_->set_exception(std::make_exception_ptr(
                    std::runtime_error("bare CAF request failed: " + caf::to_string(e))));
                quit();
              });
  }
  void on_reply() {
    if (++received_ == count_) {
      done_->set_value();
      quit();
      return;
    }
    if (sent_ < count_) send_next();
  }

  const std::vector<caf::actor>& targets_;
  int first_, count_, window_;
  int sent_ = 0, received_ = 0;
  std::promise<void>* done_;
};

// An actor system with `workers` worker threads, like a Runtime's, idle workers waiting
// as a Runtime's do.
std::unique_ptr<caf::actor_system> bare_system(caf::actor_system_config& config, int workers) {
  config.set("scheduler.max-threads", static_cast<std::size_t>(workers));
  apply_blocking_idle_wait(config);
  return std::make_unique<caf::actor_system>(config);
}

// Sends `count` requests (round robin over `targets` from `first`), `window` in flight;
// returns the seconds it took.
double run_bare(caf::actor_system& system, const std::vector<caf::actor>& targets, int first,
                int count, int window) {
  std::promise<void> done;
  auto answered = done.get_future();
  auto start = std::chrono::steady_clock::now();
  system.spawn<RawClient>(&targets, first, count, window, &done);
  if (answered.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    give_up_waiting("bare CAF actors stopped answering");
  }
  answered.get();  // rethrows a failed request
  return seconds_since(start);
}

// While one subject runs, the other's idle CAF workers fall asleep; a sleeping worker
// wakes when a job is pushed to its own queue or after its 10 ms sleep. Jobs from outside
// the actor system (dorm's reply callbacks send with anon_send) go round robin to every
// worker, but a bare CAF client's sends stay on its own worker until the other one wakes
// and steals. So each subject runs untimed for a moment before each timed slice.
template <class Run>
void wake_workers(Run&& run) {
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(20)) run(0, 1000);
}

// ---- dorm ----

class Echo : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {[](ping_atom, int x) { return x; }};
  }
};

caf::message ping_message(int i) {
  return caf::make_message(ping_atom::value, i);
}

// ---- idle memory ----

struct BareState {
  std::string value;
};

// A caf::stateful_actor<BareState> with its behavior; it adds no member.
class BareObject : public caf::stateful_actor<BareState> {
 public:
  using caf::stateful_actor<BareState>::stateful_actor;
  caf::behavior make_behavior() override {
    state.value.assign(kStateBytes, 's');
    return {[this](ping_atom, int x) { return x + static_cast<int>(state.value.size()); }};
  }
};

// Reads its state at start, then only answers.
class IdleObject : public DurableObject {
 public:
  void on_start(StartReason) override {
    auto v = get("state");
    if (!v) throw std::runtime_error(v.error().describe());
    state_ = v->value_or("");
  }
  caf::behavior behavior() override {
    return {[this](ping_atom, int x) { return x + static_cast<int>(state_.size()); }};
  }

 private:
  std::string state_;
};

// The same state, set in on_start without reading storage: what a resident object costs
// when its storage cache has nothing to hold.
class QuietObject : public DurableObject {
 public:
  void on_start(StartReason) override { state_.assign(kStateBytes, 's'); }
  caf::behavior behavior() override {
    return {[this](ping_atom, int x) { return x + static_cast<int>(state_.size()); }};
  }

 private:
  std::string state_;
};

ObjectHandle idle_handle(Runtime& runtime, const char* ns, int i) {
  return must(runtime.get(runtime.id_from_name(ns, numbered("i", i))));
}

double bare_kib_per_object(const RuntimeBenchOptions& o) {
  caf::actor_system_config config;
  auto system = bare_system(config, o.workers);
  std::vector<caf::actor> actors;
  double before = resident_bytes();
  // The handles are part of the cost: they are what keeps a bare actor alive and
  // addressable, as the directory is for a durable object.
  for (int i = 0; i < o.idle_objects; ++i) actors.push_back(system->spawn<BareObject>());
  run_bare(*system, actors, 0, o.idle_objects, o.in_flight);
  double after = resident_bytes();
  for (auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  actors.clear();
  return (after - before) / o.idle_objects / 1024;
}

// `reads`: the objects read their state in on_start (IdleObject), or read nothing
// (QuietObject).
double dorm_kib_per_object(const RuntimeBenchOptions& o, storage::Backend& backend, bool reads) {
  auto runtime = start_runtime(backend, o.workers);
  NamespaceOptions idle;
  idle.storage_cache_bytes = o.storage_cache_bytes;
  must(runtime->register_namespace("idle", [] { return std::make_unique<IdleObject>(); }, idle));
  must(runtime->register_namespace("quiet", [] { return std::make_unique<QuietObject>(); }, idle));
  double before = resident_bytes();
  Runtime& rt = *runtime;
  const char* ns = reads ? "idle" : "quiet";
  RequestPipeline(
      rt, [&rt, ns](int i) { return idle_handle(rt, ns, i); }, ping_message, 0, o.idle_objects)
      .run(o.in_flight);
  double after = resident_bytes();
  if (runtime->active_objects() != static_cast<std::size_t>(o.idle_objects)) {
    throw std::runtime_error("not every idle object stayed resident");
  }
  runtime->shutdown();
  return (after - before) / o.idle_objects / 1024;
}

// ---- tables ----

std::string with_commas(long n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

bool wanted(const RuntimeBenchOptions& o, const std::string& part) {
  return o.parts.empty() || std::find(o.parts.begin(), o.parts.end(), part) != o.parts.end();
}

}  // namespace

std::vector<RoundTripRow> bench_round_trips(const RuntimeBenchOptions& o) {
  std::vector<RoundTripRow> rows;
  for (int n : {1, 100, 10'000, 100'000}) rows.push_back(RoundTripRow{n, {}, {}});
  for (int round = 1; round <= o.rounds; ++round) {
    for (auto& row : rows) {
      caf::actor_system_config config;
      auto system = bare_system(config, o.workers);
      std::vector<caf::actor> targets;
      for (int i = 0; i < row.objects; ++i) targets.push_back(system->spawn<EchoActor>());
      storage::MemoryBackend backend;
      auto runtime = start_runtime(backend, o.workers);
      must(runtime->register_namespace("echo", [] { return std::make_unique<Echo>(); }));
      std::vector<ObjectHandle> handles;
      for (int i = 0; i < row.objects; ++i) {
        handles.push_back(must(runtime->get(runtime->id_from_name("echo", numbered("e", i)))));
      }
      auto handle_of = [&handles](int i) {
        return handles[static_cast<std::size_t>(i) % handles.size()];
      };
      // Warm-up, not measured: every object active, every actor run once.
      run_bare(*system, targets, 0, std::max(row.objects, o.in_flight), o.in_flight);
      RequestPipeline(*runtime, handle_of, ping_message, 0, std::max(row.objects, o.in_flight))
          .run(o.in_flight);

      auto run_dorm = [&](int first, int count) {
        return RequestPipeline(*runtime, handle_of, ping_message, first, count).run(o.in_flight);
      };
      auto run_raw = [&](int first, int count) {
        return run_bare(*system, targets, first, count, o.in_flight);
      };
      double bare_seconds = 0, dorm_seconds = 0;
      for (int slice = 0; slice < kSlices; ++slice) {
        int begin = static_cast<int>(static_cast<long>(o.requests) * slice / kSlices);
        int end = static_cast<int>(static_cast<long>(o.requests) * (slice + 1) / kSlices);
        bool dorm_first = (round + slice) % 2 == 0;
        for (int k = 0; k < 2; ++k) {
          if ((k == 0) == dorm_first) {
            wake_workers(run_dorm);
            dorm_seconds += run_dorm(begin, end - begin);
          } else {
            wake_workers(run_raw);
            bare_seconds += run_raw(begin, end - begin);
          }
        }
      }
      row.raw.push_back(o.requests / bare_seconds);
      row.dorm.push_back(o.requests / dorm_seconds);
      std::printf("round %d/%d, %d objects: bare CAF %.0f/s, dorm %.0f/s\n", round, o.rounds,
                  row.objects, row.raw.back(), row.dorm.back());
      std::fflush(stdout);
      runtime->shutdown();
      for (auto& t : targets) caf::anon_send_exit(t, caf::exit_reason::user_shutdown);
    }
  }
  return rows;
}

IdleMemory bench_idle_memory(const RuntimeBenchOptions& o) {
  // Every object's state is stored before anything is measured: a MemoryBackend holds it
  // in this process, and that is storage, not the cost of a resident object.
  storage::MemoryBackend backend;
  {
    auto runtime = start_runtime(backend, o.workers);
    std::string value(kStateBytes, 's');
    storage::WriteBatch batch;
    for (int i = 0; i < o.idle_objects; ++i) {
      auto id = runtime->id_from_name("idle", numbered("i", i));
      std::string key = keys::object_prefix(id.ns(), id.body());
      key += keys::kObjectData;
      key += "state";
      batch.put(key, value);
      if (batch.size() == 1000 || i + 1 == o.idle_objects) {
        must(backend.commit(batch));
        batch.clear();
      }
    }
    runtime->shutdown();
  }
  IdleMemory out;
  for (int round = 1; round <= o.rounds; ++round) {
    // Alternate which subject runs first.
    double bare = 0, dorm = 0, quiet = 0;
    if (round % 2) {
      bare = bare_kib_per_object(o);
      dorm = dorm_kib_per_object(o, backend, true);
      quiet = dorm_kib_per_object(o, backend, false);
    } else {
      quiet = dorm_kib_per_object(o, backend, false);
      dorm = dorm_kib_per_object(o, backend, true);
      bare = bare_kib_per_object(o);
    }
    out.bare_kib.push_back(bare);
    out.dorm_kib.push_back(dorm);
    out.quiet_kib.push_back(quiet);
    std::printf(
        "round %d/%d, %d idle objects: bare CAF %.2f KiB each, dorm %.2f KiB each (reading "
        "nothing: %.2f)\n",
        round, o.rounds, o.idle_objects, bare, dorm, quiet);
    std::fflush(stdout);
  }
  return out;
}

namespace {

void print_round_trips(const std::vector<RoundTripRow>& round_trips) {
  std::printf("\n| row | unit | bare caf | dorm | ratio |\n|---|---|---:|---:|---:|\n");
  for (const auto& row : round_trips) {
    // The ratio is the median of the rounds' own ratios: both subjects of a round ran
    // interleaved, under the same load.
    std::vector<double> ratios;
    for (std::size_t i = 0; i < row.raw.size(); ++i) ratios.push_back(row.dorm[i] / row.raw[i]);
    std::printf("| request/response, %s object%s | round trips/s | %.0f | %.0f | %.2f |\n",
                with_commas(row.objects).c_str(), row.objects == 1 ? "" : "s", median(row.raw),
                median(row.dorm), median(ratios));
  }
}

void print_idle_memory(const IdleMemory& m, const RuntimeBenchOptions& o) {
  double bare = median(m.bare_kib), dorm = median(m.dorm_kib), quiet = median(m.quiet_kib);
  std::printf("\n| row | unit | bare caf | dorm | difference |\n|---|---|---:|---:|---:|\n");
  std::printf("| resident idle objects, %s | KiB/object | %.2f | %.2f | %+.2f |\n",
              with_commas(o.idle_objects).c_str(), bare, dorm, dorm - bare);
  std::printf("| the same, reading nothing in on_start | KiB/object | %.2f | %.2f | %+.2f |\n",
              bare, quiet, quiet - bare);
  std::printf("(storage cache bound of the dorm objects: %zu bytes)\n", o.storage_cache_bytes);
}

void print_cold_activation(const ColdActivation& c, const RuntimeBenchOptions& o) {
  std::printf(
      "\n| row | unit | dorm, cold activation | dorm, resident (reference) | "
      "raw rocksdb, 3 gets (reference) |\n|---|---|---:|---:|---:|\n");
  for (auto [name, cold_ms, warm_ms, raw_ms] :
       {std::tuple{"p50", &c.dorm_p50, &c.warm_p50, &c.raw_p50},
        std::tuple{"p99", &c.dorm_p99, &c.warm_p99, &c.raw_p99}}) {
    std::printf("| one request at a time, on_start reads 3 keys, %s | ms | %.3f | %.3f | %.3f |\n",
                name, median(*cold_ms), median(*warm_ms), median(*raw_ms));
  }
  std::printf("(%s objects x 3 keys on disk, filled in %.1f s; %s activated per round)\n",
              with_commas(o.cold_objects).c_str(), c.fill_seconds,
              with_commas(o.cold_sample).c_str());
}

void print_alarms(const AlarmFigures& a, const RuntimeBenchOptions& o) {
  std::string pending = with_commas(a.pending), rate = with_commas(o.alarm_rate);
  std::printf(
      "\n| row | unit | dorm, AlarmInfo (whole ms) | dorm, system clock (us "
      "resolution) |\n|---|---|---:|---:|\n");
  for (auto [name, ms, us] : {std::tuple{"p50", &a.late_p50, &a.late_p50_us},
                              std::tuple{"p99", &a.late_p99, &a.late_p99_us},
                              std::tuple{"max", &a.late_max, &a.late_max_us}}) {
    std::printf("| alarm lateness, %s pending, %s/s due, %s | ms | %.0f | %.3f |\n",
                pending.c_str(), rate.c_str(), name, median(*ms), median(*us));
  }
  std::printf("| alarm index scans while they came due | scans | %.0f | |\n",
              median(a.window_scans));
  std::printf("(%s alarms due per round over %d s; storing the %s pending alarms took %.1f s)\n",
              with_commas(a.firing).c_str(), o.alarm_window_s, pending.c_str(), a.set_seconds);
  std::string delivered = with_commas(a.delivered);
  std::printf(
      "\n| row | unit | %s alarms stored | the same, %s delivered since | no alarms "
      "(reference) |\n|---|---|---:|---:|---:|\n",
      pending.c_str(), delivered.c_str());
  std::printf("| RocksDB open | ms | %.1f | %.1f | %.1f |\n", median(a.open_ms),
              median(a.delivered_open_ms), median(a.empty_open_ms));
  std::printf("| Runtime::start to first timer armed | ms | %.1f | %.1f | %.1f |\n",
              median(a.armed_ms), median(a.delivered_armed_ms), median(a.empty_armed_ms));
  std::printf("| Runtime::start returns | ms | %.1f | %.1f | %.1f |\n", median(a.start_ms),
              median(a.delivered_start_ms), median(a.empty_start_ms));
  std::printf("(alarm index entries the scheduler read at start: %zu)\n", a.index_entries_read);
}

void print_rearms(const std::vector<RearmRow>& rows) {
  std::printf(
      "\n| row | unit | re-arm (set_alarm later) | baseline (put one key) | ratio | alarm index "
      "scans |\n|---|---|---:|---:|---:|---:|\n");
  for (const auto& r : rows) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < r.rearm_per_s.size(); ++i) {
      ratios.push_back(r.rearm_per_s[i] / r.put_per_s[i]);
    }
    std::printf("| %s requests over 1,000 objects | /s | %.0f | %.0f | %.2f | %llu |\n",
                with_commas(r.requests).c_str(), median(r.rearm_per_s), median(r.put_per_s),
                median(ratios), static_cast<unsigned long long>(r.scans));
  }
}

}  // namespace

int run_runtime_bench(const RuntimeBenchOptions& o) {
  bool temporary = o.dir.empty();
  fs::path root = temporary ? fs::temp_directory_path() / numbered("dorm-bench-runtime-", getpid())
                            : fs::path(o.dir);
  fs::create_directories(root);
  std::printf("dorm bench runtime: %d rounds, %d workers, %d requests in flight, data in %s\n",
              o.rounds, o.workers, o.in_flight, root.c_str());
  std::fflush(stdout);

  std::vector<RoundTripRow> round_trips;
  if (wanted(o, "round-trips")) round_trips = bench_round_trips(o);
  std::optional<IdleMemory> memory;
  if (wanted(o, "memory")) memory = bench_idle_memory(o);
  std::optional<IdleSessions> sessions;
  if (wanted(o, "sessions")) sessions = bench_idle_sessions(o);
  std::optional<ColdActivation> cold;
  if (wanted(o, "activation")) cold = bench_cold_activation(o, root / "cold");
  std::optional<AlarmFigures> alarms;
  if (wanted(o, "alarms")) alarms = bench_alarms(o, root / "alarms");
  std::optional<StorageCacheFigures> cache;
  if (wanted(o, "storage-cache")) cache = bench_storage_cache(o, root / "storage-cache");
  std::vector<RearmRow> rearms;
  if (wanted(o, "rearms")) rearms = bench_rearms(o, root / "rearms");

  if (!round_trips.empty()) print_round_trips(round_trips);
  if (memory) print_idle_memory(*memory, o);
  if (sessions) print_idle_sessions(*sessions, o);
  if (cold) print_cold_activation(*cold, o);
  if (alarms) print_alarms(*alarms, o);
  if (cache) print_storage_cache(*cache);
  if (!rearms.empty()) print_rearms(rearms);

  if (temporary) {
    fs::remove_all(root);
  } else {
    fs::remove_all(root / "cold");
    fs::remove_all(root / "alarms");
    fs::remove_all(root / "rearms");
  }
  return 0;
}

}  // namespace dorm::bench
