// `dorm bench eviction` — what a resident budget does to memory.
//
// A runtime with a resident budget of B is sent one request each for N objects (N > B):
// the first B stay resident, every later activation evicts the least recently used one.
// RSS is read (after malloc_trim(0)) once B objects have been touched and again after all
// N; if eviction really frees memory the two readings are close. No baseline applies: the
// figure is the ratio of the two readings. Eviction is asynchronous, so while K requests
// for new objects are in flight up to about K activations more than the budget are
// resident; the allocator keeps that high-water mark, so the ratio grows with K.
#include "eviction_bench.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "bench_stats.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/memory_backend.hpp"

namespace dorm::bench {
namespace {

using touch_atom = caf::atom_constant<caf::atom("touch")>;

// Reads one key at start, answers touches: a typical small object.
class Touched : public DurableObject {
 public:
  void on_start(StartReason) override {
    auto v = get("state");
    if (!v) throw std::runtime_error(v.error().message);
    state_ = v->value_or("");
  }
  caf::behavior behavior() override {
    return {[this](touch_atom, int n) -> int { return n + static_cast<int>(state_.size()); }};
  }

 private:
  std::string state_;
};

double rss_mib() { return resident_bytes() / (1 << 20); }

// Sends one touch to each of objects [first, last) and waits for every answer.
void touch(Runtime& runtime, int first, int last, int window) {
  std::mutex mutex;
  std::condition_variable cv;
  int outstanding = 0;
  std::atomic<int> errors{0};
  for (int i = first; i < last; ++i) {
    {
      std::unique_lock lock(mutex);
      if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return outstanding < window; })) {
        throw std::runtime_error("objects stopped answering");
      }
      ++outstanding;
    }
    // (Built up in two steps: "t" + to_string() trips GCC 12's false -Wrestrict at -O3.)
    std::string name = "t";
    name += std::to_string(i);
    auto handle = runtime.get(runtime.id_from_name("touched", name));
    runtime.request(*handle,
                    [&](caf::expected<caf::message> r) {
                      if (!r) errors.fetch_add(1);
                      std::lock_guard lock(mutex);
                      --outstanding;
                      cv.notify_all();
                    },
                    touch_atom::value, i);
  }
  std::unique_lock lock(mutex);
  if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return outstanding == 0; })) {
    throw std::runtime_error("objects stopped answering");
  }
  if (errors.load() > 0) throw std::runtime_error(std::to_string(errors.load()) + " touches failed");
}

// Evictions finish asynchronously: wait (bounded) until the budget holds again.
void settle(Runtime& runtime, std::size_t budget) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (runtime.active_objects() > budget) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("evictions did not finish");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

int run_eviction_bench(const EvictionBenchOptions& options) {
  std::printf(
      "dorm bench eviction: %d objects, resident budget %d, %d requests in flight, %d workers, "
      "%d rounds\n",
      options.objects, options.budget, options.in_flight, options.workers, options.rounds);
  std::vector<double> at_budget, at_end, ratios;
  for (int round = 1; round <= options.rounds; ++round) {
    storage::MemoryBackend backend;
    RuntimeOptions ro;
    ro.workers = static_cast<std::size_t>(options.workers);
    ro.resident_budget = static_cast<std::size_t>(options.budget);
    auto runtime = std::move(Runtime::start(backend, ro)).value();
    if (!runtime->register_namespace("touched", [] { return std::make_unique<Touched>(); })) {
      throw std::runtime_error("cannot register namespace");
    }
    touch(*runtime, 0, options.budget, options.in_flight);
    double first = rss_mib();
    touch(*runtime, options.budget, options.objects, options.in_flight);
    settle(*runtime, static_cast<std::size_t>(options.budget));
    double last = rss_mib();
    std::printf("round %d: RSS %.1f MiB after %d objects, %.1f MiB after %d (resident %zu)\n",
                round, first, options.budget, last, options.objects, runtime->active_objects());
    at_budget.push_back(first);
    at_end.push_back(last);
    ratios.push_back(last / first);
  }
  std::printf("\n| measure | value |\n|---|---:|\n");
  std::printf("| RSS after %d objects (MiB, median) | %.1f |\n", options.budget, median(at_budget));
  std::printf("| RSS after %d objects (MiB, median) | %.1f |\n", options.objects, median(at_end));
  std::printf("| ratio, after %d / after %d (median) | %.3f |\n", options.objects, options.budget,
              median(ratios));
  return 0;
}

}  // namespace dorm::bench
