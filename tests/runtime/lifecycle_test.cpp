// Eviction, leases, generations, start reasons, crash() and shutdown().
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <optional>
#include <thread>

#include "captured_log.hpp"
#include "runtime_fixture.hpp"
#include "numbered.hpp"

using namespace dorm;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;
using dorm::testing::must;

namespace {

using put_atom = caf::atom_constant<caf::atom("put")>;
using read_atom = caf::atom_constant<caf::atom("read")>;
using pin_atom = caf::atom_constant<caf::atom("pin")>;
using unpin_atom = caf::atom_constant<caf::atom("unpin")>;
using dispose_atom = caf::atom_constant<caf::atom("dispose")>;
using forget_atom = caf::atom_constant<caf::atom("forget")>;


struct Log {
  std::vector<std::string> starts;  // reasons, in order
  std::map<std::string, int> stops;  // reason -> count
  std::map<std::string, int> stops_by_name;  // object value "name" -> count
};

class Box : public DurableObject {
 public:
  explicit Box(Log* log) : log_(log) {}
  void on_start(StartReason reason) override { log_->starts.push_back(to_string(reason)); }
  void on_stop(StopReason reason) override {
    ++log_->stops[to_string(reason)];
    ++log_->stops_by_name[id().to_string()];
  }
  caf::behavior behavior() override {
    return {
        [this](put_atom, std::string v) -> std::string {
          must(put("v", v).ok(), "put failed");
          return v;
        },
        [this](read_atom) -> std::string {
          auto v = get("v");
          must(v.ok(), "get failed");
          return v->value_or("");
        },
        [this](pin_atom) -> bool {
          lease_ = keep_alive();
          return lease_.held();
        },
        [this](unpin_atom) -> bool {
          lease_.release();
          return true;
        },
        [this](dispose_atom) -> bool {
          dispose();
          return true;
        },
        // Deletes its state, then leaves as an object with nothing stored.
        [this](forget_atom) -> bool {
          must(delete_all().ok(), "delete_all failed");
          dispose_empty();
          return true;
        },
    };
  }

 private:
  Log* log_;
  Lease lease_;
};

struct BoxFixture : RuntimeFixture {
  Log log;
  NamespaceOptions ns_options;
  explicit BoxFixture(RuntimeOptions options = {}, NamespaceOptions ns = {})
      : RuntimeFixture(options), ns_options(ns) {
    add_namespace();
  }
  // Stop while `log` still exists: the objects' on_stop writes to it.
  ~BoxFixture() { stop(); }
  void add_namespace() {
    REQUIRE(runtime->register_namespace("box", [this] { return std::make_unique<Box>(&log); }, ns_options).ok());
  }
  template <class... Ts>
  Reply ask(std::string_view name, Ts... xs) {
    Reply r;
    runtime->request(handle("box", name), r.handler(), xs...);
    runtime->run_until_idle();
    return r;
  }
  std::string read(std::string_view name) {
    auto r = ask(name, read_atom::value);
    REQUIRE(r.ok());
    return r.value->get_as<std::string>(0);
  }
};

}  // namespace

TEST_CASE("dispose: the activation leaves once its turn commits, even leased, and wakes; dispose_empty leaves no record of the id") {
  BoxFixture f;
  REQUIRE(f.ask("kept", put_atom::value, std::string("x")).ok());
  REQUIRE(f.ask("kept", pin_atom::value).ok());
  REQUIRE(f.ask("gone", put_atom::value, std::string("y")).ok());
  CHECK(f.runtime->active_objects() == 2);
  CHECK(f.runtime->remembered_ids() == 0);

  CHECK(f.ask("kept", dispose_atom::value).ok());  // the reply is released before it leaves
  CHECK(f.runtime->active_objects() == 1);
  CHECK(f.runtime->remembered_ids() == 1);  // its next activation is a wake
  CHECK(f.log.stops["idle"] == 1);

  CHECK(f.ask("gone", forget_atom::value).ok());
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.runtime->remembered_ids() == 1);  // nothing more: "gone" left no trace
  CHECK(f.log.stops["idle"] == 2);

  CHECK(f.read("kept") == "x");
  CHECK(f.read("gone").empty());
  REQUIRE(f.log.starts.size() == 4);
  CHECK(f.log.starts[2] == "wake");
  CHECK(f.log.starts[3] == "first");  // the runtime's start kind, as for an id never seen
  f.expected_active = 2;
}

TEST_CASE("eviction: 10k idle objects leave memory and come back with their state") {
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::minutes(1);
  BoxFixture f({}, ns);
  constexpr int kObjects = 10'000;
  std::vector<Reply> replies(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    f.runtime->request(f.handle("box", dorm::testing::numbered("b", i)), replies[static_cast<std::size_t>(i)].handler(),
                       put_atom::value, dorm::testing::numbered("value-", i));
  }
  f.runtime->run_until_idle();
  for (auto& r : replies) REQUIRE(r.ok());
  CHECK(f.runtime->active_objects() == static_cast<std::size_t>(kObjects));
  f.clock.advance(59'000);
  f.runtime->run_until_idle();
  CHECK(f.runtime->active_objects() == static_cast<std::size_t>(kObjects));  // not yet idle long enough
  f.clock.advance(1'000);
  f.runtime->run_until_idle();
  CHECK(f.runtime->active_objects() == 0);
  CHECK(f.log.stops["idle"] == kObjects);
  for (int i = 0; i < kObjects; i += 97) CHECK(f.read(dorm::testing::numbered("b", i)) == dorm::testing::numbered("value-", i));
  CHECK(f.log.starts.back() == "wake");
  f.expected_active = static_cast<std::size_t>((kObjects + 96) / 97);
}

TEST_CASE("eviction: a message that keeps coming keeps its object resident") {
  NamespaceOptions ns;
  ns.idle_timeout = std::chrono::seconds(10);
  BoxFixture f({}, ns);
  for (int i = 0; i < 10; ++i) {
    CHECK(f.ask("busy", put_atom::value, std::to_string(i)).ok());
    f.clock.advance(6'000);
    f.runtime->run_until_idle();
  }
  CHECK(f.log.stops["idle"] == 0);
  CHECK(f.log.starts.size() == 1);
  f.expected_active = 1;
}

TEST_CASE("budget: least recently used objects are evicted; a leased one survives") {
  RuntimeOptions options;
  options.resident_budget = 10;
  BoxFixture f(options);
  auto pinned = f.ask("pinned", pin_atom::value);
  REQUIRE(pinned.ok());
  for (int i = 0; i < 30; ++i) CHECK(f.ask(dorm::testing::numbered("o", i), put_atom::value, std::string("x")).ok());
  CHECK(f.runtime->active_objects() == 10);
  std::string pinned_id = f.runtime->id_from_name("box", "pinned").to_string();
  CHECK(f.log.stops_by_name[pinned_id] == 0);
  CHECK(f.log.stops["budget"] == 21);
  // The most recent ones stayed; the oldest went (and come back on demand).
  CHECK(f.read("o0") == "x");
  CHECK(f.log.starts.back() == "wake");
  // Released, the pinned object is an ordinary candidate again.
  CHECK(f.ask("pinned", unpin_atom::value).ok());
  for (int i = 0; i < 12; ++i) CHECK(f.ask(dorm::testing::numbered("p", i), put_atom::value, std::string("y")).ok());
  CHECK(f.log.stops_by_name[pinned_id] == 1);
  f.expected_active = 10;
}

TEST_CASE("budget: when only leased objects remain, budget_exceeded is logged and none is evicted") {
  dorm::testing::CapturedLog log;
  {
    RuntimeOptions options;
    options.resident_budget = 1;
    BoxFixture f(options);
    CHECK(f.ask("a", pin_atom::value).ok());
    CHECK(f.ask("b", pin_atom::value).ok());
    CHECK(f.runtime->active_objects() == 2);
    CHECK(f.log.stops.empty());
    f.expected_active = 2;
  }
  CHECK(log.count("budget_exceeded") >= 1);
}

TEST_CASE("restart: start reasons for first, crash, shutdown, redeploy, wake and reset") {
  BoxFixture f;
  CHECK(f.runtime->start_kind() == StartReason::first);
  CHECK(f.ask("a", put_atom::value, std::string("1")).ok());
  CHECK(f.log.starts.back() == "first");

  f.runtime->crash();
  f.start();
  f.add_namespace();
  CHECK(f.runtime->start_kind() == StartReason::after_crash);
  CHECK(f.read("a") == "1");
  CHECK(f.log.starts.back() == "after_crash");

  f.expected_active = 1;
  f.stop();  // graceful
  f.start();
  f.add_namespace();
  CHECK(f.runtime->start_kind() == StartReason::after_shutdown);
  CHECK(f.read("a") == "1");
  CHECK(f.log.starts.back() == "after_shutdown");
  CHECK(f.log.stops["shutdown"] == 1);

  f.stop();
  RuntimeOptions v2;
  v2.version_label = "v2";
  f.start(v2);
  f.add_namespace();
  CHECK(f.runtime->start_kind() == StartReason::after_redeploy);
  CHECK(f.read("a") == "1");
  CHECK(f.log.starts.back() == "after_redeploy");

  f.faulty.fail_commit();
  CHECK_FALSE(f.ask("a", put_atom::value, std::string("2")).ok());
  CHECK(f.read("a") == "1");
  CHECK(f.log.starts.back() == "after_reset");
}

TEST_CASE("crash: the dead runtime's storage handle is fenced; the next sees exactly what committed") {
  BoxFixture f;
  CHECK(f.ask("a", put_atom::value, std::string("committed")).ok());
  storage::Backend& dead_handle = f.runtime->backend();
  auto generation = f.runtime->generation();
  f.runtime->crash();
  storage::WriteBatch late;
  late.put("late", "write");
  auto r = dead_handle.commit(late);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::fenced);
  CHECK(f.log.stops.empty());  // crash runs no hook
  CHECK_FALSE(f.memory.get("late")->has_value());
  f.start();
  f.add_namespace();
  CHECK(f.runtime->generation() == generation + 1);
  CHECK(f.read("a") == "committed");
  f.expected_active = 1;
}

namespace {

// Every key and value of the store, for "nothing changed" checks.
std::vector<storage::KeyValue> snapshot(storage::Backend& store) {
  storage::ScanOptions all;
  auto rows = store.scan(all);
  REQUIRE(rows.ok());
  return *rows;
}

bool same(const std::vector<storage::KeyValue>& a, const std::vector<storage::KeyValue>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].value != b[i].value) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("one runtime per store: of eight racing starts one wins, the others fail busy and change nothing") {
  storage::MemoryBackend memory;
  constexpr int kRacers = 8;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::unique_ptr<Runtime>> winners(kRacers);
  std::vector<std::optional<Error>> refusals(kRacers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRacers; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      RuntimeOptions options;
      options.workers = 1;
      auto started = Runtime::start(memory, options);
      if (started.ok()) {
        winners[i] = std::move(started).value();
      } else {
        refusals[i] = started.error();
      }
    });
  }
  while (ready.load() < kRacers) std::this_thread::yield();
  go.store(true);
  for (auto& t : threads) t.join();

  Runtime* winner = nullptr;
  int refused = 0;
  for (int i = 0; i < kRacers; ++i) {
    if (winners[i]) {
      CHECK(winner == nullptr);
      winner = winners[i].get();
    } else {
      REQUIRE(refusals[i]);
      CHECK(refusals[i]->code == ErrorCode::busy);
      CHECK(refusals[i]->message.find("another runtime of this process") != std::string::npos);
      ++refused;
    }
  }
  REQUIRE(winner != nullptr);
  CHECK(refused == kRacers - 1);
  // The losers bumped no generation: the winner's is the store's first.
  CHECK(winner->generation() == 1);

  // A late start while the winner runs leaves the store exactly as it was.
  auto before = snapshot(memory);
  auto late = Runtime::start(memory);
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == ErrorCode::busy);
  CHECK(same(before, snapshot(memory)));

  // A crash gives the store up at once (its handle is fenced); a shutdown too.
  winner->crash();
  auto after_crash = Runtime::start(memory);
  REQUIRE(after_crash.ok());
  CHECK((*after_crash)->generation() == 2);
  CHECK((*after_crash)->start_kind() == StartReason::after_crash);
  (*after_crash)->shutdown();
  auto after_shutdown = Runtime::start(memory);
  REQUIRE(after_shutdown.ok());
  CHECK((*after_shutdown)->generation() == 3);
  for (auto& w : winners) w.reset();
}
