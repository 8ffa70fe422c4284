// `dorm bench runtime`, cold activation: how long the first request to an object takes
// when its state must come from a freshly opened RocksDB database.
//
// A database holds N objects with 3 keys each (written once, flushed and compacted into
// table files). Each round opens it again (a new RocksDbBackend: new, empty block cache;
// the operating system's page cache stays warm — nothing here drops it), starts a
// Runtime, and sends one request at a time to a random sample of objects. Each object's
// on_start reads its 3 keys; the latency is from the send to the reply handler. Two
// references: a second request to the same objects, now resident (one request at a time
// without the activation: mostly the wake-up of an idle CAF worker), and 3 gets of the
// same keys through raw RocksDB opened afresh with dorm's Options (the storage part alone).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <future>
#include <numeric>
#include <random>

#include "bench_stats.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "runtime_bench_parts.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kValueBytes = 64;
const std::array<std::string, 3> kKeys = {"k0", "k1", "k2"};

// Reads its 3 keys at start; answers with how many bytes it read.
class ColdObject : public DurableObject {
 public:
  void on_start(StartReason) override {
    auto values = get_many(kKeys);
    if (!values) throw std::runtime_error(values.error().describe());
    for (const auto& v : *values) bytes_ += v ? v->size() : 0;
  }
  caf::behavior behavior() override {
    return {[this](ping_atom, int) { return static_cast<int>(bytes_); }};
  }

 private:
  std::size_t bytes_ = 0;
};

ObjectId cold_id(Runtime& runtime, int i) {
  return runtime.id_from_name("cold", numbered("c", i));
}

// Where object i's user data lives in the store (see keys.hpp).
std::string data_prefix(const ObjectId& id) {
  std::string prefix = keys::object_prefix(id.ns(), id.body());
  prefix += keys::kObjectData;
  return prefix;
}

// Writes every object's keys straight into the store, in the runtime's key layout, then
// leaves everything in compacted table files. Returns each object's data prefix.
std::vector<std::string> fill(const RuntimeBenchOptions& o, const fs::path& dir) {
  auto backend = must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
  auto runtime = start_runtime(*backend, o.workers);  // mints the id secret
  std::vector<std::string> prefixes;
  std::string value(kValueBytes, 'v');
  storage::WriteBatch batch;
  for (int i = 0; i < o.cold_objects; ++i) {
    prefixes.push_back(data_prefix(cold_id(*runtime, i)));
    for (const auto& k : kKeys) batch.put(prefixes.back() + k, value);
    if (batch.size() >= 3000 || i + 1 == o.cold_objects) {
      must(backend->commit(batch));
      batch.clear();
    }
  }
  runtime->shutdown();
  backend->db().Flush(rocksdb::FlushOptions());
  backend->db().CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);
  return prefixes;
}

// Milliseconds from a send to its reply, one request at a time.
double one_request_ms(Runtime& runtime, int i) {
  auto handle = must(runtime.get(cold_id(runtime, i)));
  std::promise<std::pair<Clock::time_point, int>> replied;
  auto reply = replied.get_future();
  auto sent = Clock::now();
  runtime.request(
      handle,
      [&replied](caf::expected<caf::message> r) {
        auto at = Clock::now();
        int bytes = r && r->match_elements<int>() ? r->get_as<int>(0) : -1;
        replied.set_value({at, bytes});
      },
      ping_atom::value, i);
  if (reply.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    give_up_waiting("a cold object did not answer");
  }
  auto [at, bytes] = reply.get();
  if (bytes != static_cast<int>(kKeys.size() * kValueBytes)) {
    throw std::runtime_error("a cold object did not read its 3 keys");
  }
  return std::chrono::duration<double, std::milli>(at - sent).count();
}

struct DormLatencies {
  std::vector<double> cold;  // first request: activation, on_start reads 3 keys
  std::vector<double> warm;  // a second request to the same objects, now resident
};

DormLatencies dorm_latencies(const RuntimeBenchOptions& o, const fs::path& dir,
                             const std::vector<int>& sample) {
  auto backend = must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
  auto runtime = start_runtime(*backend, o.workers);
  must(runtime->register_namespace("cold", [] { return std::make_unique<ColdObject>(); }));
  DormLatencies out;
  for (int i : sample) out.cold.push_back(one_request_ms(*runtime, i));
  if (runtime->active_objects() != sample.size()) {
    throw std::runtime_error("cold activation: unexpected number of active objects");
  }
  for (int i : sample) out.warm.push_back(one_request_ms(*runtime, i));
  runtime->shutdown();
  return out;
}

std::vector<double> raw_latencies(const fs::path& dir, const std::vector<std::string>& prefixes,
                                  const std::vector<int>& sample) {
  rocksdb::DB* raw = nullptr;
  auto status = rocksdb::DB::Open(storage::RocksDbBackend::make_options({}), dir.string(), &raw);
  if (!status.ok()) throw std::runtime_error(status.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::vector<double> ms;
  ms.reserve(sample.size());
  std::string value;
  for (int i : sample) {
    const auto& prefix = prefixes[static_cast<std::size_t>(i)];
    auto start = Clock::now();
    std::size_t bytes = 0;
    for (const auto& k : kKeys) {
      if (db->Get(rocksdb::ReadOptions(), prefix + k, &value).ok()) bytes += value.size();
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (bytes != kKeys.size() * kValueBytes) throw std::runtime_error("raw RocksDB missed a key");
  }
  (void)db->Close();
  return ms;
}

}  // namespace

ColdActivation bench_cold_activation(const RuntimeBenchOptions& o, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  ColdActivation out;
  std::printf("cold activation: writing %d objects x 3 keys...\n", o.cold_objects);
  std::fflush(stdout);
  auto start = Clock::now();
  auto prefixes = fill(o, dir);
  out.fill_seconds = seconds_since(start);

  std::vector<int> all(static_cast<std::size_t>(o.cold_objects));
  std::iota(all.begin(), all.end(), 0);
  int sample_size = std::min(o.cold_sample, o.cold_objects);
  for (int round = 1; round <= o.rounds; ++round) {
    std::mt19937 rng(static_cast<unsigned>(1000 + round));
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int> sample(all.begin(), all.begin() + sample_size);
    DormLatencies dorm;
    std::vector<double> raw;
    // Alternate which subject runs first; each opens the database afresh.
    if (round % 2) {
      dorm = dorm_latencies(o, dir, sample);
      raw = raw_latencies(dir, prefixes, sample);
    } else {
      raw = raw_latencies(dir, prefixes, sample);
      dorm = dorm_latencies(o, dir, sample);
    }
    out.dorm_p50.push_back(percentile(dorm.cold, 50));
    out.dorm_p99.push_back(percentile(dorm.cold, 99));
    out.warm_p50.push_back(percentile(dorm.warm, 50));
    out.warm_p99.push_back(percentile(dorm.warm, 99));
    out.raw_p50.push_back(percentile(raw, 50));
    out.raw_p99.push_back(percentile(raw, 99));
    std::printf(
        "round %d/%d, %d cold activations: p50 %.3f ms, p99 %.3f ms; then warm: p50 "
        "%.3f ms, p99 %.3f ms; raw RocksDB 3 gets: p50 %.3f ms, p99 %.3f ms\n",
        round, o.rounds, sample_size, out.dorm_p50.back(), out.dorm_p99.back(), out.warm_p50.back(),
        out.warm_p99.back(), out.raw_p50.back(), out.raw_p99.back());
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return out;
}

}  // namespace dorm::bench
