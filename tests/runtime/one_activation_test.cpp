// Exactly one activation per id, on CAF's real work-stealing scheduler (not virtual time).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "numbered.hpp"

using namespace dorm;

namespace {

using ping_atom = caf::atom_constant<caf::atom("ping")>;

struct Census {
  std::atomic<int> live{0};
  std::atomic<int> activations{0};
  std::atomic<int> violations{0};  // an id started while another activation of it was live
  std::mutex mutex;
  std::map<std::string, int> live_per_id;
};

class Tracked : public DurableObject {
 public:
  explicit Tracked(Census* census) : census_(census) {}
  void on_start(StartReason) override {
    census_->live.fetch_add(1);
    census_->activations.fetch_add(1);
    std::lock_guard lock(census_->mutex);
    if (++census_->live_per_id[id().to_string()] > 1) census_->violations.fetch_add(1);
  }
  void on_stop(StopReason) override {
    census_->live.fetch_sub(1);
    std::lock_guard lock(census_->mutex);
    --census_->live_per_id[id().to_string()];
  }
  caf::behavior behavior() override {
    return {[this](ping_atom, int n) -> int {
      handled_ += 1;
      return n;
    }};
  }

 private:
  Census* census_;
  int handled_ = 0;
};

}  // namespace

namespace {

// Sends `kSends` requests to `kIds` ids (round robin) from 4 threads and waits (bounded)
// for every answer. Returns how many answers each request got and how many were errors.
struct Outcome {
  std::vector<int> answers;
  int errors = 0;
};

Outcome hammer(Runtime& runtime, int kIds = 100, int kSends = 10'000) {
  constexpr int kSenderThreads = 4;
  std::vector<ObjectHandle> handles;
  for (int i = 0; i < kIds; ++i) {
    handles.push_back(*runtime.get(runtime.id_from_name("tracked", dorm::testing::numbered("obj-", i))));
  }
  std::vector<std::atomic<int>> answers(kSends);
  std::atomic<int> answered{0};
  std::atomic<int> errors{0};
  std::mutex done_mutex;
  std::condition_variable done;
  std::vector<std::thread> senders;
  for (int t = 0; t < kSenderThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = t; i < kSends; i += kSenderThreads) {
        runtime.request(handles[static_cast<std::size_t>(i % kIds)],
                        [&, i](caf::expected<caf::message> r) {
                          if (!r || r->get_as<int>(0) != i) errors.fetch_add(1);
                          answers[static_cast<std::size_t>(i)].fetch_add(1);
                          if (answered.fetch_add(1) + 1 == kSends) {
                            std::lock_guard lock(done_mutex);
                            done.notify_all();
                          }
                        },
                        ping_atom::value, i);
      }
    });
  }
  for (auto& s : senders) s.join();
  {
    std::unique_lock lock(done_mutex);
    bool all = done.wait_for(lock, std::chrono::seconds(120), [&] { return answered.load() >= kSends; });
    REQUIRE_MESSAGE(all, "only " << answered.load() << " of " << kSends << " answered");
  }
  Outcome out;
  for (auto& a : answers) out.answers.push_back(a.load());
  out.errors = errors.load();
  return out;
}

}  // namespace

TEST_CASE("one activation per id: 10k sends to 100 ids race idle eviction and a budget of 10") {
  storage::MemoryBackend backend;
  Census census;
  RuntimeOptions options;
  options.workers = 4;
  options.resident_budget = 10;
  auto started = Runtime::start(backend, options);
  REQUIRE(started.ok());
  auto runtime = std::move(started).value();
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::milliseconds(1);
  REQUIRE(runtime->register_namespace("tracked", [&] { return std::make_unique<Tracked>(&census); }, ns).ok());
  auto outcome = hammer(*runtime);
  CHECK(outcome.errors == 0);
  CHECK(std::all_of(outcome.answers.begin(), outcome.answers.end(), [](int n) { return n == 1; }));
  CHECK(census.violations.load() == 0);
  // Evictions really happened: far more activations than ids.
  MESSAGE("activations: " << census.activations.load());
  CHECK(census.activations.load() > 100);
  runtime.reset();
  CHECK(census.live.load() == 0);
}

TEST_CASE("one activation per id: 10k concurrent sends to 100 ids on 4 worker threads") {
  storage::MemoryBackend backend;
  Census census;
  RuntimeOptions options;
  options.workers = 4;
  auto started = Runtime::start(backend, options);
  REQUIRE(started.ok());
  auto runtime = std::move(started).value();
  REQUIRE(runtime->register_namespace("tracked", [&] { return std::make_unique<Tracked>(&census); }).ok());
  auto outcome = hammer(*runtime);
  CHECK(outcome.errors == 0);
  CHECK(std::all_of(outcome.answers.begin(), outcome.answers.end(), [](int n) { return n == 1; }));
  CHECK(census.violations.load() == 0);
  CHECK(census.activations.load() == 100);  // no eviction: each id activated once
  CHECK(census.live.load() == 100);
  CHECK(runtime->active_objects() == 100u);
  runtime.reset();  // on_stop(shutdown) for each
  CHECK(census.live.load() == 0);
}

TEST_CASE("one activation per id: 20k sends to 1,000 ids in every directory shard race idle eviction") {
  // No resident budget: only the ids' shard locks order their activations, and senders of
  // ids in different shards run side by side while activations stop and start again.
  storage::MemoryBackend backend;
  Census census;
  RuntimeOptions options;
  options.workers = 4;
  auto started = Runtime::start(backend, options);
  REQUIRE(started.ok());
  auto runtime = std::move(started).value();
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::milliseconds(1);
  REQUIRE(runtime->register_namespace("tracked", [&] { return std::make_unique<Tracked>(&census); }, ns).ok());
  auto outcome = hammer(*runtime, 1'000, 20'000);
  CHECK(outcome.errors == 0);
  CHECK(std::all_of(outcome.answers.begin(), outcome.answers.end(), [](int n) { return n == 1; }));
  CHECK(census.violations.load() == 0);
  MESSAGE("activations: " << census.activations.load());
  CHECK(census.activations.load() >= 1'000);
  // The directory counts what is live: an activation leaves it only after its on_stop, so
  // at any instant it holds at least the started ones. Idle evictions still run, and both
  // counts only fall now: read the directory first (evaluated in one expression, the
  // compiler may read the census first, and an eviction between the reads fails this).
  const std::size_t in_directory = runtime->active_objects();
  const int started_not_stopped = census.live.load();
  CHECK(in_directory >= static_cast<std::size_t>(started_not_stopped));
  runtime.reset();
  CHECK(census.live.load() == 0);
}
