// The object storage cache inside the runtime: a repeated listing is served without the
// backend, eviction and reset drop what was cached, and, over random scripts of turns
// with failing commits, resets and evictions, a cached object answers exactly as an
// uncached one given the same history.
#include <doctest/doctest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dorm/runtime/keys.hpp"
#include "numbered.hpp"
#include "object_cache.hpp"
#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::testing::must;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;

namespace {

using script_atom = caf::atom_constant<caf::atom("script")>;
using Script = std::vector<std::string>;

constexpr const char* kAbsent = "~";

std::optional<std::string> field(const std::string& text) {
  if (text == kAbsent) return std::nullopt;
  return text;
}

// Runs a script of storage operations as one turn and reports what each read saw:
//   g KEY | p KEY VALUE | d KEY | x (delete_all) | a NAME DUE (set_alarm) | A NAME
//   l PREFIX START END REVERSE LIMIT   (START/END "~" for none)
//   t (the turn throws: it fails and the object resets) | e (dispose after the turn)
class Scripted : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {[this](script_atom, const Script& script) -> std::string {
      std::string out;
      for (const auto& op : script) out += run(op) + ";";
      return out;
    }};
  }

 private:
  std::string run(const std::string& op) {
    std::istringstream in(op);
    std::string verb, a, b;
    in >> verb >> a >> b;
    if (verb == "g") {
      auto v = get(a);
      must(v.ok(), "get failed");
      return v->value_or(kAbsent);
    }
    if (verb == "p") return put(a, b).ok() ? "" : "put failed";
    if (verb == "d") {
      auto existed = del(a);
      must(existed.ok(), "del failed");
      return *existed ? "1" : "0";
    }
    if (verb == "x") return delete_all().ok() ? "" : "delete_all failed";
    if (verb == "a") return set_alarm(a, std::stoll(b)).ok() ? "" : "set_alarm failed";
    if (verb == "A") {
      auto due = get_alarm(a);
      must(due.ok(), "get_alarm failed");
      return *due ? std::to_string(**due) : kAbsent;
    }
    if (verb == "t") throw std::runtime_error("the script fails its turn");
    if (verb == "e") {
      dispose();
      return "";
    }
    return list_op(a, b, in);
  }

  std::string list_op(const std::string& prefix, const std::string& start, std::istream& in) {
    std::string end, reverse;
    std::size_t limit = 0;
    in >> end >> reverse >> limit;
    ListOptions o;
    o.prefix = prefix == kAbsent ? "" : prefix;
    o.start = field(start);
    o.end = field(end);
    o.reverse = reverse == "r";
    o.limit = limit;
    auto rows = list(o);
    must(rows.ok(), "list failed");
    std::string out;
    for (const auto& kv : *rows) out += kv.key + "=" + kv.value + ",";
    return out;
  }
};

struct CacheFixture : RuntimeFixture {
  CacheFixture() {
    NamespaceOptions cached;  // the default bound
    REQUIRE(runtime->register_namespace("cached", [] { return std::make_unique<Scripted>(); }, cached).ok());
    NamespaceOptions small;
    small.storage_cache_bytes = 4 * 1024;  // a few entries: evictions all the time
    REQUIRE(runtime->register_namespace("small", [] { return std::make_unique<Scripted>(); }, small).ok());
    NamespaceOptions partly;  // a family and a single key never cached
    partly.uncached_prefixes = {"b/x/", "c"};
    REQUIRE(runtime->register_namespace("partly", [] { return std::make_unique<Scripted>(); }, partly).ok());
    NamespaceOptions plain;
    plain.storage_cache_bytes = 0;
    REQUIRE(runtime->register_namespace("plain", [] { return std::make_unique<Scripted>(); }, plain).ok());
  }

  // The script's reply, or "error" if its turn failed.
  std::string run(const ObjectHandle& h, Script script) {
    Reply r;
    runtime->request(h, r.handler(), script_atom::value, std::move(script));
    runtime->run_until_idle();
    REQUIRE(r.arrived);
    if (!r.ok()) return "error";
    return r.value->get_as<std::string>(0);
  }

  // What the store holds under the object's data prefix, as relative keys.
  std::vector<storage::KeyValue> stored(const ObjectHandle& h) {
    auto prefix = keys::object_prefix(h.id.ns(), h.id.body()) + keys::kObjectData;
    auto rows = memory.scan(storage::ScanOptions::with_prefix(prefix)).value_or_throw();
    for (auto& kv : rows) kv.key.erase(0, prefix.size());
    return rows;
  }
};

}  // namespace

TEST_CASE("storage cache: a repeated listing after the first does not reach the backend") {
  CacheFixture f;
  auto cached = f.handle("cached", "o");
  auto plain = f.handle("plain", "o");
  for (const auto& h : {cached, plain}) {
    // Keys written and deleted by earlier turns: the tombstones a store's scan walks.
    for (int i = 0; i < 20; ++i) {
      auto k = dorm::testing::numbered("s/", i);
      CHECK(f.run(h, {"p " + k + " v"}) == ";");
      CHECK(f.run(h, {"d " + k}) == "1;");
    }
    CHECK(f.run(h, {"p s/live 1", "p t/other 2", "e"}) == ";;;");  // then evicted
  }
  const std::string listing = "l s/ ~ ~ f 0";
  auto scans = [&] { return f.faulty.counters().scans; };

  auto before = scans();
  CHECK(f.run(cached, {listing}) == "s/live=1,;");
  auto first = scans();
  CHECK(first > before);  // the activation's first read: from the store
  CHECK(f.run(cached, {listing}) == "s/live=1,;");
  for (int i = 2; i < 7; ++i) {
    // Its own writes and deletes keep the listing in step, still without the backend.
    auto k = dorm::testing::numbered("s/n", i);
    CHECK(f.run(cached, {"p " + k + " x", "p s/live " + std::to_string(i)}) == ";;");
    CHECK(f.run(cached, {listing}) == "s/live=" + std::to_string(i) + "," + k + "=x,;");
    CHECK(f.run(cached, {"d " + k}) == "1;");
    CHECK(f.run(cached, {listing}) == "s/live=" + std::to_string(i) + ",;");
  }
  CHECK(scans() == first);

  // The same object without a cache lists from the store every time.
  before = scans();
  for (int i = 0; i < 3; ++i) CHECK(f.run(plain, {listing}) == "s/live=1,;");
  CHECK(scans() >= before + 3);
  f.expected_active = 2;
}

TEST_CASE("storage cache: an object bigger than its prefetch has its listed prefix cached") {
  CacheFixture f;
  auto h = f.handle("cached", "big");
  Script fill;
  for (std::size_t i = 0; i < 3 * ObjectCache::kPrefetchEntries; ++i) fill.push_back("p a/" + std::to_string(100 + i) + " v");
  fill.push_back("p z/1 last");
  f.run(h, fill);
  f.run(h, {"e"});  // a fresh activation: it knows only what it reads from now on
  auto before = f.faulty.counters().scans;
  CHECK(f.run(h, {"l z/ ~ ~ f 0"}) == "z/1=last,;");
  auto first = f.faulty.counters();
  CHECK(first.scans > before);  // the prefetch saw only the first keys: z/ came from the store
  // Listed again, and a key of the listed range read (absent): memory only.
  CHECK(f.run(h, {"l z/ ~ ~ f 0", "g z/2", "g z/1"}) == "z/1=last,;~;last;");
  CHECK(f.faulty.counters().reads == first.reads);
  f.expected_active = 1;
}

TEST_CASE("storage cache: eviction and reset drop the cache; the next activation reads the store") {
  CacheFixture f;
  auto h = f.handle("cached", "o");
  CHECK(f.run(h, {"p k/1 a"}) == ";");
  auto scans = [&] { return f.faulty.counters().scans; };
  CHECK(f.run(h, {"l k/ ~ ~ f 0"}) == "k/1=a,;");
  auto before = scans();
  CHECK(f.run(h, {"l k/ ~ ~ f 0"}) == "k/1=a,;");
  CHECK(scans() == before);  // cached

  CHECK(f.run(h, {"e"}) == ";");  // evicted after this turn
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.run(h, {"l k/ ~ ~ f 0"}) == "k/1=a,;");
  CHECK(scans() > before);  // a new activation, with nothing cached

  // A commit applied durably but reported failed: the turn fails and the object resets.
  // What the store holds (k/2) is what the next activation sees, not what a cache kept.
  f.faulty.fail_commit_after_durable();
  CHECK(f.run(h, {"p k/2 b"}) == "error");
  before = scans();
  CHECK(f.run(h, {"l k/ ~ ~ f 0"}) == "k/1=a,k/2=b,;");
  CHECK(scans() > before);
  // And a commit that failed outright left nothing behind, in the store or in memory.
  f.faulty.fail_commit();
  CHECK(f.run(h, {"p k/3 c", "l k/ ~ ~ f 0"}) == "error");
  CHECK(f.run(h, {"l k/ ~ ~ f 0"}) == "k/1=a,k/2=b,;");
  f.expected_active = 1;
}

TEST_CASE("storage cache: keys under an uncached prefix are read from the store every time and never held") {
  CacheFixture f;
  auto h = f.handle("partly", "o");
  CHECK(f.run(h, {"p b/1 a", "p b/x/1 b", "p c c0"}) == ";;;");
  auto counters = [&] { return f.faulty.counters(); };
  CHECK(f.run(h, {"l b/ ~ ~ f 0", "g b/1"}) == "b/1=a,b/x/1=b,;a;");
  auto first = counters();
  // The rest of the object is served from memory...
  CHECK(f.run(h, {"g b/1", "g b/2", "l b/1 ~ ~ f 0"}) == "a;~;b/1=a,;");
  CHECK(counters().reads == first.reads);
  // ...and every read that reaches an uncached key goes to the store, each time: a point
  // read, a listing of the family, and a listing around it.
  for (int i = 0; i < 3; ++i) {
    auto before = counters();
    CHECK(f.run(h, {"g c"}) == "c0;");
    CHECK(counters().reads == before.reads + 1);
    before = counters();
    CHECK(f.run(h, {"l b/x/ ~ ~ f 0"}) == "b/x/1=b,;");
    CHECK(f.run(h, {"l b/ ~ ~ f 0"}) == "b/1=a,b/x/1=b,;");
    CHECK(counters().scans == before.scans + 2);
  }
  // Its own writes there are not kept either: the store answers, with what it holds.
  CHECK(f.run(h, {"p c c1", "p b/x/2 d"}) == ";;");
  auto before = counters();
  CHECK(f.run(h, {"g c", "l b/x/ ~ ~ f 0"}) == "c1;b/x/1=b,b/x/2=d,;");
  CHECK(counters().reads == before.reads + 2);
  f.expected_active = 1;
}

TEST_CASE("storage cache: writes under an uncached prefix leave the cache's size unchanged") {
  storage::MemoryBackend backend;
  const dorm::UncachedPrefixes uncached({"e/"});
  auto cache_ptr = ObjectCache::make(backend, "o/", 1024 * 1024, &uncached);
  auto& cache = *cache_ptr;
  storage::WriteBatch first;
  first.put("o/k", "v");
  REQUIRE(backend.commit(first).ok());
  cache.apply(first);
  REQUIRE(cache.get("o/k").value_or_throw() == std::optional<std::string>("v"));
  const auto bytes = cache.bytes();
  const auto entries = cache.entries();
  for (int i = 0; i < 1000; ++i) {
    storage::WriteBatch b;
    b.put(dorm::testing::numbered("o/e/", i), std::string(200, 'x'));
    REQUIRE(backend.commit(b).ok());
    cache.apply(b);
  }
  CHECK(cache.bytes() == bytes);
  CHECK(cache.entries() == entries);
  // Still answered, from the store, and not taken into memory by the reads either.
  CHECK(cache.get(dorm::testing::numbered("o/e/", 7)).value_or_throw() == std::optional<std::string>(std::string(200, 'x')));
  CHECK(cache.scan(storage::ScanOptions::with_prefix("o/e/")).value_or_throw().size() == 1000);
  CHECK(cache.bytes() == bytes);
  CHECK(cache.entries() == entries);
  CHECK_FALSE(cache.known_absent("o/e/nothing"));
}

namespace dorm {
struct ObjectCacheTesting {
  static void set_clock(ObjectCache& cache, std::uint32_t value) { cache.clock_ = value; }
};
}  // namespace dorm

TEST_CASE("storage cache: LRU order survives the stamp counter running out") {
  storage::MemoryBackend backend;
  // Room for about a dozen of these entries.
  const std::size_t bound = 12 * (ObjectCache::kSlotBytes + 16);
  auto cache = ObjectCache::make(backend, "o/", bound);
  storage::WriteBatch fill;
  for (int i = 0; i < 10; ++i) fill.put(dorm::testing::numbered("o/k", i), "0123456789");
  REQUIRE(backend.commit(fill).ok());
  cache->apply(fill);
  // The first read lists the object (stamping every entry): done before the clock is set.
  REQUIRE_FALSE(cache->get("o/none").value_or_throw().has_value());
  // Read them oldest first, with the 32-bit stamps running out half way through.
  dorm::ObjectCacheTesting::set_clock(*cache, 0xffffffff - 5);
  for (int i = 0; i < 10; ++i) REQUIRE(cache->get(dorm::testing::numbered("o/k", i)).value_or_throw());
  // Gone from the store: from now on only the cache can answer them.
  storage::WriteBatch gone;
  for (int i = 0; i < 10; ++i) gone.del(dorm::testing::numbered("o/k", i));
  REQUIRE(backend.commit(gone).ok());
  // New entries push out the least recently read ones: the first read, not the last.
  storage::WriteBatch more;
  for (int i = 0; i < 4; ++i) more.put(dorm::testing::numbered("o/n", i), "0123456789");
  REQUIRE(backend.commit(more).ok());
  cache->apply(more);
  CHECK(cache->entries() < 14);
  CHECK_FALSE(cache->get(dorm::testing::numbered("o/k", 0)).value_or_throw().has_value());
  CHECK(cache->get(dorm::testing::numbered("o/k", 9)).value_or_throw() == std::optional<std::string>("0123456789"));
}

TEST_CASE("storage cache: uncached prefixes are checked when the namespace is registered") {
  RuntimeFixture f;
  auto factory = [] { return std::make_unique<Scripted>(); };
  NamespaceOptions empty;
  empty.uncached_prefixes = {"e/", ""};
  auto refused = f.runtime->register_namespace("empty", factory, empty);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::invalid_argument);
  CHECK(refused.error().message.find("uncached prefix") != std::string::npos);
  NamespaceOptions many;
  for (int i = 0; i < 9; ++i) many.uncached_prefixes.push_back(std::to_string(i) + "/");
  CHECK(f.runtime->register_namespace("many", factory, many).error().code == ErrorCode::invalid_argument);
  // Nothing was registered: the names are free.
  many.uncached_prefixes.resize(8);
  CHECK(f.runtime->register_namespace("many", factory, many).ok());
  CHECK(f.runtime->register_namespace("empty", factory, NamespaceOptions{}).ok());
}

namespace {

// Random scripts over a small set of keys, so that turns meet each other's writes.
class ScriptMaker {
 public:
  ScriptMaker(std::uint64_t seed, std::int64_t future_ms) : rng_(seed), future_ms_(future_ms) {}

  // A script of 1-6 operations; `writes`: whether it writes (its turn has a batch).
  Script next(bool& writes) {
    Script out;
    writes = false;
    for (int i = pick(1, 6); i > 0; --i) out.push_back(op(writes));
    return out;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::string key() {
    static const char* families[] = {"a/", "b/", "b/x/", "c"};
    std::string k = families[pick(0, 3)];
    return k == "c" ? k : k + std::to_string(pick(0, 9));
  }
  std::string maybe_key() { return pick(0, 2) == 0 ? key() : kAbsent; }
  std::string op(bool& writes) {
    static const char* prefixes[] = {"~", "a/", "b/", "b/x/", "a/1"};
    static const int sizes[] = {1, 20, 300};
    switch (pick(0, 9)) {
      case 0: case 1: return "g " + key();
      case 2: case 3:
        return "l " + std::string(prefixes[pick(0, 4)]) + " " + maybe_key() + " " + maybe_key() +
               (pick(0, 1) ? " r " : " f ") + std::to_string(pick(0, 1) ? 0 : pick(1, 3));
      case 4: case 5:
        writes = true;
        return "p " + key() + " " + std::string(static_cast<std::size_t>(sizes[pick(0, 2)]), static_cast<char>('a' + pick(0, 25)));
      case 6: writes = true; return "d " + key();
      case 7:
        writes = true;
        return pick(0, 4) == 0 ? "x" : "a " + std::string(pick(0, 1) ? "x " : "y ") + std::to_string(future_ms_ + pick(0, 1000));
      default: return "A " + std::string(pick(0, 1) ? "x" : "y");
    }
  }

  std::mt19937_64 rng_;
  std::int64_t future_ms_;  // alarms are set there: none fires during the test
};

}  // namespace

TEST_CASE("storage cache: over random turns, failed commits, resets and evictions, a cached object answers as an uncached one") {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    CacheFixture f;
    ScriptMaker maker(seed, f.clock.now_ms() + 86'400'000);
    std::mt19937_64 faults(seed);
    auto reference = f.handle("plain", "o");
    const ObjectHandle subjects[] = {f.handle("cached", "o"), f.handle("small", "o"), f.handle("partly", "o")};
    int resets = 0, evictions = 0;
    for (int step = 0; step < 250; ++step) {
      CAPTURE(step);
      bool writes = false;
      Script script = maker.next(writes);
      // 0: commit fails, nothing applied; 1: applied, reported failed; 2: the turn throws;
      // 3: the object is evicted after the turn; otherwise a plain turn.
      int fault = std::uniform_int_distribution<int>(0, 15)(faults);
      if (fault == 2) script.push_back("t");
      if (fault == 3) script.push_back("e");
      bool arm = writes && fault <= 1;
      // A write no later one cancels: the turn commits, and so meets the armed fault. (A
      // cached object commits nothing when its writes cancel out, an uncached one cannot
      // know they do: the fault would fire for one and wait for the next turn in the other.)
      if (arm) script.push_back("p zz " + std::to_string(step));
      auto run = [&](const ObjectHandle& h) {
        if (arm && fault == 0) f.faulty.fail_commit();
        if (arm && fault == 1) f.faulty.fail_commit_after_durable();
        return f.run(h, script);
      };
      auto expected = run(reference);
      if (expected == "error") ++resets;
      if (fault == 3) ++evictions;
      for (const auto& h : subjects) {
        CHECK(run(h) == expected);
        CHECK(f.stored(h) == f.stored(reference));
      }
    }
    CHECK(resets > 10);
    CHECK(evictions > 10);
    for (const auto& h : {reference, subjects[0], subjects[1], subjects[2]}) f.run(h, {"e"});
  }
}

TEST_CASE("storage cache: uncached prefixes — which keys they hold and which ranges reach them") {
  const dorm::UncachedPrefixes none;
  CHECK_FALSE(none.holds("e/x"));
  CHECK_FALSE(none.reached_by("", std::nullopt));
  const dorm::UncachedPrefixes prefixes({"e/", std::string("\xff\xff", 2)});
  CHECK(prefixes.holds("e/"));
  CHECK(prefixes.holds("e/x"));
  CHECK_FALSE(prefixes.holds("e"));
  CHECK_FALSE(prefixes.holds("f/"));
  CHECK(prefixes.holds(std::string("\xff\xff\x01", 3)));
  // [lower, upper) against [e/, e0): overlapping, touching, disjoint.
  CHECK(prefixes.reached_by("a", std::string("e/a")));
  CHECK(prefixes.reached_by("e/z", std::string("f")));
  CHECK_FALSE(prefixes.reached_by("a", std::string("e/")));  // ends where it begins
  CHECK_FALSE(prefixes.reached_by("e0", std::string("f")));  // begins at its end
  // The all-0xff prefix has no successor: every range from below it to the end reaches it.
  CHECK(prefixes.reached_by("g", std::nullopt));
  CHECK_FALSE(prefixes.reached_by("g", std::string("h")));
}
