// Exactly one activation per id, on CAF's real work-stealing scheduler (not virtual time),
// within a runtime and across a crash and its successor.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dorm/runtime/keys.hpp"
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

namespace {

using append_atom = caf::atom_constant<caf::atom("append")>;

// Each append is one turn: read the count, write entry `count` with the writer's tag (the
// runtime it ran in), write the count. Two runtimes running one object side by side would
// both write the same entry number, or a stale one; a runtime that ran on after its
// successor started would write a tag 1 entry after tag 2 ones.
class TaggedLedger : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {[this](append_atom, int tag) -> int {
      auto n = get("n");
      if (!n.ok()) throw std::runtime_error("get n failed");
      const int count = *n ? std::stoi(**n) : 0;
      if (!put(entry_key(count), std::to_string(tag)).ok()) throw std::runtime_error("put failed");
      if (!put("n", std::to_string(count + 1)).ok()) throw std::runtime_error("put failed");
      return count;
    }};
  }
  static std::string entry_key(int n) {
    std::string digits = std::to_string(n);
    return "e/" + std::string(8 - digits.size(), '0') + digits;
  }
};

// What the senders were told: acknowledged (object, entry) -> tag. Shared with the reply
// handlers, which a crashed runtime may still run, or never run, after the test moved on.
struct Acks {
  std::mutex mutex;
  std::map<std::pair<int, int>, int> entries;
  std::atomic<int> count{0};
  std::atomic<int> errors{0};
};

// Sends appends tagged `tag` to `objects` ledgers from 3 threads until `stop`, or until each
// thread sent `limit` when one is given.
void flood(Runtime& runtime, int objects, int tag, std::atomic<bool>& stop,
           const std::shared_ptr<Acks>& acks, std::vector<std::thread>& threads, int limit = -1) {
  std::vector<ObjectHandle> handles;
  for (int i = 0; i < objects; ++i) {
    handles.push_back(*runtime.get(runtime.id_from_name("ledger", dorm::testing::numbered("l-", i))));
  }
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&runtime, handles, tag, &stop, acks, t, limit] {
      for (int i = t; !stop.load() && (limit < 0 || i / 3 < limit); i += 3) {
        const int object = i % static_cast<int>(handles.size());
        runtime.request(handles[static_cast<std::size_t>(object)],
                        [acks, object, tag](caf::expected<caf::message> r) {
                          if (!r) {
                            acks->errors.fetch_add(1);
                            return;
                          }
                          std::lock_guard lock(acks->mutex);
                          acks->entries[{object, r->get_as<int>(0)}] = tag;
                          acks->count.fetch_add(1);
                        },
                        append_atom::value, tag);
        // At most 2,000 ahead of the answers (a burst with a limit does not wait).
        while (limit < 0 && !stop.load() && i / 3 > acks->count.load() + 2'000) {
          std::this_thread::yield();
        }
      }
    });
  }
}

bool wait_for(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("takeover: a runtime crashed under load and its successor never run one ledger side by side") {
  storage::MemoryBackend backend;
  constexpr int kObjects = 16;
  RuntimeOptions options;
  options.workers = 4;

  auto first = Runtime::start(backend, options);
  REQUIRE(first.ok());
  auto a = std::move(first).value();
  REQUIRE(a->register_namespace("ledger", [] { return std::make_unique<TaggedLedger>(); }).ok());
  // Where each ledger's keys live (ids are the same in every runtime over this store).
  std::vector<std::string> data;
  for (int object = 0; object < kObjects; ++object) {
    auto id = a->id_from_name("ledger", dorm::testing::numbered("l-", object));
    data.push_back(keys::object_prefix(id.ns(), id.body()) + keys::kObjectData);
  }
  auto acks = std::make_shared<Acks>();
  std::atomic<bool> stop_a{false};
  std::vector<std::thread> senders;
  flood(*a, kObjects, 1, stop_a, acks, senders);
  REQUIRE(wait_for([&] { return acks->count.load() >= 3'000; }));
  // While the senders still send: the successor may not start beside a live runtime...
  auto refused = Runtime::start(backend, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::busy);
  // ...and starts the moment it crashed, with turns of the dead one still in its mailboxes:
  // a last burst of appends is sent and the runtime crashes right after it.
  stop_a.store(true);
  for (auto& s : senders) s.join();
  senders.clear();
  std::atomic<bool> burst_done{false};
  flood(*a, kObjects, 1, burst_done, acks, senders, 2'000);
  for (auto& s : senders) s.join();
  senders.clear();
  const int acked_before_crash = acks->count.load();
  a->crash();
  auto second = Runtime::start(backend, options);
  REQUIRE(second.ok());
  auto b = std::move(second).value();
  const int acked_by_a = acks->count.load();
  REQUIRE(b->register_namespace("ledger", [] { return std::make_unique<TaggedLedger>(); }).ok());
  std::atomic<bool> stop_b{false};
  flood(*b, kObjects, 2, stop_b, acks, senders);
  REQUIRE(wait_for([&] { return acks->count.load() >= acked_by_a + 3'000; }));
  stop_b.store(true);
  for (auto& s : senders) s.join();
  b->shutdown();
  a.reset();
  b.reset();

  // The ledger as stored: each object's entries 0..n-1 with no gap, every tag 1 entry
  // before every tag 2 entry, and every acknowledged append there with its tag.
  std::lock_guard lock(acks->mutex);
  int tag1 = 0, tag2 = 0;
  for (int object = 0; object < kObjects; ++object) {
    CAPTURE(object);
    const std::string& prefix = data[static_cast<std::size_t>(object)];
    auto rows = backend.scan(storage::ScanOptions::with_prefix(prefix + "e/"));
    REQUIRE(rows.ok());
    auto count = backend.get(prefix + "n");
    REQUIRE(count.ok());
    REQUIRE(count->has_value());
    CHECK(rows->size() == static_cast<std::size_t>(std::stoi(**count)));
    int last_tag = 1;
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const auto& row = (*rows)[i];
      CHECK(row.key == prefix + TaggedLedger::entry_key(static_cast<int>(i)));
      const int tag = std::stoi(row.value);
      CHECK(tag >= last_tag);
      last_tag = tag;
      (tag == 1 ? tag1 : tag2) += 1;
    }
  }
  for (const auto& [entry, tag] : acks->entries) {
    auto stored = backend.get(data[static_cast<std::size_t>(entry.first)] +
                              TaggedLedger::entry_key(entry.second));
    REQUIRE(stored.ok());
    REQUIRE(stored->has_value());
    CHECK(std::stoi(**stored) == tag);
  }
  MESSAGE("entries by the crashed runtime: " << tag1 << " (" << acked_before_crash
                                             << " acknowledged before the crash), by its successor: "
                                             << tag2 << "; acknowledged in all: " << acks->entries.size());
  CHECK(tag1 >= acked_by_a);
  CHECK(tag2 >= 3'000);
}
