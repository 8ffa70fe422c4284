// The object storage cache against the uncached path, over random operation sequences.
//
// One object's storage is driven twice with the same operations, turn by turn: `cached`
// (an ObjectStorage with a cache, over a FaultyBackend) and `reference` (an uncached
// ObjectStorage reading the same store directly). Only `cached` commits; `reference`
// reads what the store holds, with the turn's own writes on top — the answer every read
// of `cached` must give. Turns end by committing, by a commit that fails (nothing
// applied, or applied and reported failed: then the object is reset), by a failed turn,
// or by an eviction; reads fail now and then. Bounds from a few entries to the default
// exercise eviction of entries and of complete ranges.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dorm/runtime/keys.hpp"
#include "dorm/storage/faulty_backend.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "numbered.hpp"
#include "object_storage.hpp"

using dorm::Epoch;
using dorm::IdCodec;
using dorm::ListOptions;
using dorm::ObjectId;
using dorm::Result;
using dorm::StorageLimits;
using dorm::detail::ObjectStorage;
using dorm::storage::FaultyBackend;
using dorm::storage::MemoryBackend;
using dorm::storage::ScanOptions;
using dorm::testing::numbered;

namespace {

// The same outcome: both failed, or both gave equal values.
template <class T>
bool same(const Result<T>& a, const Result<T>& b) {
  if (a.ok() != b.ok()) return false;
  if constexpr (std::is_void_v<T>) {
    return true;
  } else {
    return !a.ok() || *a == *b;
  }
}

class Differential {
 public:
  Differential(std::uint64_t seed, std::size_t bound) : rng_(seed), bound_(bound) { activate(); }

  // Runs `turns` random turns, checking every read of `cached` against `reference`.
  void run(int turns) {
    for (int t = 0; t < turns; ++t) {
      int ops = pick(1, 8);
      bool failed = false;
      for (int i = 0; i < ops && !failed; ++i) failed = !step();
      end_turn(failed);
      if (pick(0, 19) == 0) check_against_store();
    }
    check_against_store();
  }

  std::size_t read_ops = 0;        // reads of `cached` (get, list, ...)
  std::size_t backend_reads = 0;   // reads that reached the backend
  std::size_t resets = 0;
  std::size_t evictions = 0;
  std::size_t failed_reads = 0;
  std::size_t max_cache_bytes = 0;

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  void activate() {
    ++activation_;
    if (!cached_settings_) cached_settings_.emplace(dorm::detail::ObjectSettings{nullptr, faulty_, limits_, bound_});
    cached_ = std::make_unique<ObjectStorage>(*cached_settings_, id_, Epoch{1, activation_});
    cached_->begin_turn();
  }

  // Small families, so that turns meet each other's keys, and a large one ("m/"), so
  // that the prefetch and the turn batch's pages of 64 see only part of the object.
  std::string key() {
    static const char* families[] = {"a/", "b/", "d/x/", "d/", "c", "m/", "m/"};
    std::string k = families[pick(0, 6)];
    if (k == "m/") return k + std::to_string(pick(100, 299));
    if (k != "c") k += std::to_string(pick(0, 11));
    return k;
  }
  std::string value() {
    static const int sizes[] = {0, 3, 20, 300, 1500};
    return std::string(static_cast<std::size_t>(sizes[pick(0, 4)]), static_cast<char>('a' + pick(0, 25)));
  }
  ListOptions list_options() {
    static const char* prefixes[] = {"", "a/", "b/", "d/", "d/x/", "a/1", "zz", "m/", "m/2"};
    ListOptions o;
    o.prefix = prefixes[pick(0, 8)];
    if (pick(0, 3) == 0) o.start = key();
    if (pick(0, 5) == 0) o.start_after = key();
    if (pick(0, 3) == 0) o.end = key();
    o.reverse = pick(0, 1) == 1;
    static const std::size_t limits[] = {0, 0, 1, 2, 5, 70};
    o.limit = limits[pick(0, 5)];
    return o;
  }

  // One operation on both; false when `cached` failed to read (the turn fails).
  bool step() {
    if (pick(0, 29) == 0) faulty_.fail_reads(1);
    auto before = faulty_.counters();
    bool read = true, ok = true;
    int op = pick(0, 10);
    switch (op) {
      case 0: case 1: {
        auto k = key();
        auto c = cached_->get(k);
        ok = c.ok();
        if (ok) CHECK(same(c, reference_.get(k)));
        break;
      }
      case 2: {
        std::vector<std::string> ks{key(), key(), key()};
        auto c = cached_->get_many(ks);
        ok = c.ok();
        if (ok) CHECK(same(c, reference_.get_many(ks)));
        break;
      }
      case 3: case 4: {
        auto o = list_options();
        auto c = cached_->list(o);
        ok = c.ok();
        if (ok) CHECK(same(c, reference_.list(o)));
        break;
      }
      case 5: case 6: case 8: {
        if (op == 8 && pick(0, 14) == 0) {
          auto c = cached_->delete_all();  // reads the alarm records
          ok = c.ok() && !cached_->failure();
          if (ok) CHECK(same(c, reference_.delete_all()));
          break;
        }
        read = false;
        auto k = key();
        auto v = value();
        CHECK(same(cached_->put(k, v), reference_.put(k, v)));
        break;
      }
      case 7: {
        auto k = key();
        auto c = cached_->del(k);  // reads whether the key existed
        ok = c.ok();
        if (ok) CHECK(same(c, reference_.del(k)));
        break;
      }
      case 9: {
        std::string name = pick(0, 1) ? "x" : "y";
        auto due = static_cast<std::int64_t>(pick(1, 1000));
        auto c = cached_->set_alarm(name, due);
        ok = c.ok() && !cached_->failure();
        if (ok) CHECK(same(c, reference_.set_alarm(name, due)));
        break;
      }
      default: {
        std::string name = pick(0, 1) ? "x" : "y";
        auto c = cached_->get_alarm(name);
        ok = c.ok();
        if (ok) CHECK(same(c, reference_.get_alarm(name)));
      }
    }
    faulty_.fail_reads(0);  // an armed failure a cache hit did not use
    auto after = faulty_.counters();
    if (read) ++read_ops;
    backend_reads += after.reads - before.reads;
    failed_reads += after.failed_reads - before.failed_reads;
    max_cache_bytes = std::max(max_cache_bytes, cached_->cache_bytes());
    CHECK(cached_->cache_bytes() <= bound_);
    return ok;
  }

  void end_turn(bool failed) {
    reference_.discard();  // it reads the store: what `cached` commits lands there
    if (failed) {
      // A failed turn writes nothing; the runtime resets the object.
      cached_->discard();
      ++resets;
      return activate();
    }
    int outcome = pick(0, 19);
    if (outcome == 0) faulty_.fail_commit();
    if (outcome == 1) faulty_.fail_commit_after_durable();
    // (With nothing to write there is no commit, and an armed fault waits for the next.)
    if (!cached_->commit()) {
      ++resets;
      return activate();
    }
    if (outcome == 2) {
      ++evictions;
      return activate();
    }
    cached_->begin_turn();
  }

  // Everything the object holds, through `cached` in a turn of its own, is the store's.
  void check_against_store() {
    auto listed = cached_->list(ListOptions{});
    REQUIRE(listed.ok());
    auto prefix = dorm::keys::object_prefix(id_.ns(), id_.body()) + dorm::keys::kObjectData;
    auto stored = memory_.scan(ScanOptions::with_prefix(prefix)).value_or_throw();
    for (auto& kv : stored) kv.key.erase(0, prefix.size());
    CHECK(*listed == stored);
  }

  MemoryBackend memory_;
  FaultyBackend faulty_{memory_};
  StorageLimits limits_;
  IdCodec codec_ = IdCodec::create(std::string(IdCodec::kSecretBytes, 's')).value_or_throw();
  ObjectId id_ = codec_.from_name("ns", "subject");
  dorm::detail::ObjectSettings reference_settings_{nullptr, memory_, limits_, 0};
  ObjectStorage reference_{reference_settings_, id_, Epoch{1, 0}};
  std::mt19937_64 rng_;
  std::size_t bound_;
  std::uint64_t activation_ = 0;
  std::optional<dorm::detail::ObjectSettings> cached_settings_;
  std::unique_ptr<ObjectStorage> cached_;
};

}  // namespace

TEST_CASE("storage cache: the cached path answers every read as the store and the turn would, over random histories") {
  for (std::size_t bound : {std::size_t{1500}, std::size_t{8 * 1024}, std::size_t{1024 * 1024}}) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      CAPTURE(bound);
      CAPTURE(seed);
      Differential d(seed * 7919 + bound, bound);
      d.run(600);
      // The histories did what they are for: commits failed, objects were reset and
      // evicted, reads failed, and the bound was reached where it is small.
      CHECK(d.resets > 0);
      CHECK(d.evictions > 0);
      CHECK(d.failed_reads > 0);
      if (bound < 1024 * 1024) CHECK(d.max_cache_bytes > bound / 2);
      // With room for everything, most reads never reached the backend.
      if (bound == 1024 * 1024) CHECK(d.backend_reads * 2 < d.read_ops);
    }
  }
}
