// Runtime::stats(): what GET /metrics reads from the runtime — activations, residents,
// evictions by reason, resets, turns and their latency, alarm counts and late alarms.
#include <doctest/doctest.h>

#include <map>
#include <numeric>
#include <string>

#include "runtime_fixture.hpp"
#include "numbered.hpp"

using namespace dorm;
using dorm::testing::must;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;

namespace {

using put_atom = caf::atom_constant<caf::atom("put")>;
using fail_atom = caf::atom_constant<caf::atom("fail")>;
using alarm_atom = caf::atom_constant<caf::atom("alarm")>;
using setfail_atom = caf::atom_constant<caf::atom("setfail")>;

// Alarm names whose first delivery throws, shared with the objects (it outlives resets).
struct Faults {
  std::map<std::string, int> alarm_failures;
};

class Tally : public DurableObject {
 public:
  explicit Tally(Faults* faults) : faults_(faults) {}
  caf::behavior behavior() override {
    return {
        [this](put_atom) -> int {
          must(put("k", "v").ok(), "put failed");
          return 0;
        },
        [](fail_atom) -> int { throw std::runtime_error("this turn fails on purpose"); },
        [this](alarm_atom, std::string name, std::int64_t due) -> int {
          must(set_alarm(name, due).ok(), "set_alarm failed");
          return 0;
        },
        // Sets an alarm, then fails: nothing of the turn commits.
        [this](setfail_atom, std::string name, std::int64_t due) -> int {
          must(set_alarm(name, due).ok(), "set_alarm failed");
          throw std::runtime_error("failing after set_alarm");
        },
    };
  }
  void on_alarm(const AlarmInfo& info) override {
    if (auto it = faults_->alarm_failures.find(info.name);
        it != faults_->alarm_failures.end() && it->second > 0) {
      --it->second;
      throw std::runtime_error("alarm handler fails on purpose");
    }
  }

 private:
  Faults* faults_;
};

struct StatsFixture : RuntimeFixture {
  Faults faults;
  explicit StatsFixture(RuntimeOptions options = {}) : RuntimeFixture(options) {
    REQUIRE(
        runtime->register_namespace("tally", [this] { return std::make_unique<Tally>(&faults); })
            .ok());
    NamespaceOptions idle;
    idle.idle_timeout = std::chrono::milliseconds(1000);
    REQUIRE(runtime
                ->register_namespace(
                    "napper", [this] { return std::make_unique<Tally>(&faults); }, idle)
                .ok());
  }
  template <class... Ts>
  Reply ask(std::string_view ns, std::string_view name, Ts... xs) {
    Reply r;
    runtime->request(handle(ns, name), r.handler(), xs...);
    runtime->run_until_idle();
    return r;
  }
  RuntimeStats::Namespace ns(std::string_view name) {
    for (auto& n : runtime->stats().namespaces) {
      if (n.name == name) return n;
    }
    FAIL("no namespace " << name);
    return {};
  }
};

}  // namespace

TEST_CASE("stats: activations, residents, evictions by reason and resets, per namespace") {
  RuntimeOptions options;
  options.resident_budget = 2;
  StatsFixture f(options);
  auto names = f.runtime->stats().namespaces;
  REQUIRE(names.size() == 2);  // every registered namespace, in name order, before any use
  CHECK(names[0].name == "napper");
  CHECK(names[1].name == "tally");
  CHECK(names[1].activations == 0);
  CHECK(names[1].resident == 0);

  REQUIRE(f.ask("tally", "a", put_atom::value).ok());
  REQUIRE(f.ask("tally", "b", put_atom::value).ok());
  auto tally = f.ns("tally");
  CHECK(tally.activations == 2);
  CHECK(tally.resident == 2);
  CHECK(tally.stopped_budget == 0);

  // A third resident is over the budget of two: the least recently used one leaves.
  REQUIRE(f.ask("tally", "c", put_atom::value).ok());
  tally = f.ns("tally");
  CHECK(tally.activations == 3);
  CHECK(tally.resident == 2);
  CHECK(tally.stopped_budget == 1);
  CHECK(tally.stopped_idle == 0);

  // A failed turn resets its object: it leaves memory, counted as a reset.
  CHECK_FALSE(f.ask("tally", "c", fail_atom::value).ok());
  tally = f.ns("tally");
  CHECK(tally.resets == 1);
  CHECK(tally.resident == 1);

  // The namespace with an idle timeout: its object leaves once idle that long.
  REQUIRE(f.ask("napper", "n", put_atom::value).ok());
  CHECK(f.ns("napper").resident == 1);
  f.run_until(f.clock.now_ms() + 5'000);
  auto napper = f.ns("napper");
  CHECK(napper.activations == 1);
  CHECK(napper.resident == 0);
  CHECK(napper.stopped_idle == 1);
  CHECK(f.ns("tally").stopped_idle == 0);  // namespaces are counted apart
  CHECK(f.runtime->active_objects() == 1);
  f.expected_active = 1;
}

TEST_CASE("stats: every turn is counted and timed, failed ones included") {
  StatsFixture f;
  auto before = f.runtime->stats().turn_latency;
  REQUIRE(f.ask("tally", "a", put_atom::value).ok());  // on_start, then the handler
  REQUIRE(f.ask("tally", "a", put_atom::value).ok());
  CHECK_FALSE(f.ask("tally", "a", fail_atom::value).ok());
  auto after = f.runtime->stats().turn_latency;
  CHECK(after.count - before.count == 4);
  CHECK(std::accumulate(after.buckets.begin(), after.buckets.end(), std::uint64_t{0}) ==
        after.count);
  CHECK(after.sum_seconds >= before.sum_seconds);
}

TEST_CASE(
    "stats: alarms set and removed follow committed turns; late alarms are the ones waiting") {
  StatsFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  REQUIRE(f.ask("tally", "a", alarm_atom::value, std::string("x"), t0 + 1'000).ok());
  auto s = f.runtime->stats();
  CHECK(s.alarms_set == 1);
  CHECK(s.alarms_removed == 0);
  // Moving it deletes one record and writes another.
  REQUIRE(f.ask("tally", "a", alarm_atom::value, std::string("x"), t0 + 2'000).ok());
  s = f.runtime->stats();
  CHECK(s.alarms_set == 2);
  CHECK(s.alarms_removed == 1);
  // A turn that fails commits nothing, and counts nothing.
  CHECK_FALSE(f.ask("tally", "b", setfail_atom::value, std::string("y"), t0 + 1'000).ok());
  CHECK(f.runtime->stats().alarms_set == 2);
  CHECK(f.runtime->stats().alarms_late == 0);

  // The first delivery fails: the alarm waits for its retry, late until it succeeds.
  f.faults.alarm_failures["x"] = 1;
  f.run_until(t0 + 2'000);
  s = f.runtime->stats();
  CHECK(s.alarms_late == 1);
  CHECK(s.alarms_removed == 1);  // still stored
  f.run_until(t0 + 10'000);
  s = f.runtime->stats();
  CHECK(s.alarms_late == 0);
  CHECK(s.alarms_set - s.alarms_removed == 0);  // delivered and cleared
  f.expected_active = 1;
}

TEST_CASE("stats: alarms overdue at a start and held back by the overdue rate are late") {
  StatsFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  for (int i = 0; i < 50; ++i) {
    REQUIRE(f.ask("tally", dorm::testing::numbered("o", i), alarm_atom::value, std::string(""), t0 + 1 + i)
                .ok());
  }
  f.expected_active = 50;
  f.stop();
  f.clock.advance(10'000);  // every one comes due while no runtime runs
  RuntimeOptions options;
  options.overdue_alarm_rate = 10;  // 10 a second: 5 s to release them all
  f.start(options);
  REQUIRE(
      f.runtime->register_namespace("tally", [&f] { return std::make_unique<Tally>(&f.faults); })
          .ok());
  f.runtime->run_until_idle();
  const std::int64_t started = f.clock.now_ms();
  f.run_until(started + 1'000);
  auto late = f.runtime->stats().alarms_late;
  CHECK(late >= 35);  // at most ~10 released in the first second
  CHECK(late < 50);
  f.run_until(started + 10'000);
  CHECK(f.runtime->stats().alarms_late == 0);
  f.expected_active = 50;
}
