// Alarms on virtual time: due times, named alarms, gated sets, retries with seeded jitter,
// the exhausted hook, restarts over stored alarms, and the overdue release rate.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "runtime_fixture.hpp"
#include "numbered.hpp"

using namespace dorm;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;
using dorm::testing::must;

namespace {

using set_atom = caf::atom_constant<caf::atom("set")>;
using setmany_atom = caf::atom_constant<caf::atom("setmany")>;
using del_atom = caf::atom_constant<caf::atom("del")>;
using get_atom = caf::atom_constant<caf::atom("get")>;
using setfail_atom = caf::atom_constant<caf::atom("setfail")>;
using delfail_atom = caf::atom_constant<caf::atom("delfail")>;

struct Firing {
  std::string object;
  std::string alarm;
  int attempt;
  std::int64_t scheduled;
  std::int64_t actual;
  bool exhausted;
};

// Shared with the objects: survives their resets, as a test's record must.
struct World {
  std::vector<Firing> firings;
  std::map<std::string, int> fail_first;  // alarm name -> attempts that throw
  std::map<std::string, std::int64_t> rearm_once;  // alarm name -> set again at actual + this
  int activations = 0;
};


class Alarmed : public DurableObject {
 public:
  explicit Alarmed(World* world) : world_(world) {}
  void on_start(StartReason) override { ++world_->activations; }
  caf::behavior behavior() override {
    return {
        [this](set_atom, std::string name, std::int64_t due) -> int {
          must(set_alarm(name, due).ok(), "set_alarm failed");
          return 0;
        },
        // Sets `count` alarms "n0".."n<count-1>" due at first, first + step, ...
        [this](setmany_atom, int count, std::int64_t first, std::int64_t step) -> int {
          for (int i = 0; i < count; ++i) {
            must(set_alarm(dorm::testing::numbered("n", i), first + step * i).ok(), "set_alarm failed");
          }
          return count;
        },
        [this](del_atom, std::string name) -> bool {
          auto r = delete_alarm(name);
          must(r.ok(), "delete_alarm failed");
          return *r;
        },
        [this](get_atom, std::string name) -> std::int64_t {
          auto r = get_alarm(name);
          must(r.ok(), "get_alarm failed");
          return r->value_or(-1);
        },
        [this](setfail_atom, std::string name, std::int64_t due) -> int {
          must(set_alarm(name, due).ok(), "set_alarm failed");
          throw std::runtime_error("failing after set_alarm");
        },
        [this](delfail_atom, std::string name) -> int {
          must(delete_alarm(name).ok(), "delete_alarm failed");
          throw std::runtime_error("failing after delete_alarm");
        },
    };
  }
  void on_alarm(const AlarmInfo& info) override {
    world_->firings.push_back({id().to_string(), info.name, info.attempt, info.scheduled_ms,
                               info.actual_ms, false});
    if (auto it = world_->rearm_once.find(info.name); it != world_->rearm_once.end()) {
      std::int64_t later = info.actual_ms + it->second;
      world_->rearm_once.erase(it);
      must(set_alarm(info.name, later).ok(), "re-arm failed");
    }
    if (auto it = world_->fail_first.find(info.name); it != world_->fail_first.end() && it->second > 0) {
      --it->second;
      throw std::runtime_error("alarm handler fails on purpose");
    }
  }
  void on_alarm_exhausted(const AlarmInfo& info) override {
    world_->firings.push_back({id().to_string(), info.name, info.attempt, info.scheduled_ms,
                               info.actual_ms, true});
  }

 private:
  World* world_;
};

// Sets alarm "s" in on_start unless it has one, commits at once, then fails that on_start
// while world->fail_start lasts (an object whose start commits early and then throws).
class StartAlarmed : public DurableObject {
 public:
  StartAlarmed(World* world, int* fail_start, std::int64_t due) : world_(world), fail_start_(fail_start), due_(due) {}
  void on_start(StartReason) override {
    if (!get_alarm("s").value_or_throw()) {
      must(set_alarm("s", due_).ok(), "set_alarm failed");
      must(commit().ok(), "commit failed");
    }
    if (*fail_start_ > 0) {
      --*fail_start_;
      throw std::runtime_error("on_start fails after its commit");
    }
  }
  caf::behavior behavior() override {
    return {[](get_atom, std::string) -> std::int64_t { return 0; }};
  }
  void on_alarm(const AlarmInfo& info) override {
    world_->firings.push_back({id().to_string(), info.name, info.attempt, info.scheduled_ms, info.actual_ms, false});
  }

 private:
  World* world_;
  int* fail_start_;
  std::int64_t due_;
};

struct AlarmFixture : RuntimeFixture {
  World world;
  explicit AlarmFixture(RuntimeOptions options = {}) : RuntimeFixture(options) { add_namespace(); }
  void add_namespace() {
    REQUIRE(runtime->register_namespace("alarmed", [this] { return std::make_unique<Alarmed>(&world); }).ok());
  }
  void restart(RuntimeOptions options = {}) {
    stop();
    start(options);
    add_namespace();
  }
  template <class... Ts>
  caf::message ask(std::string_view name, Ts... xs) {
    Reply r;
    runtime->request(handle("alarmed", name), r.handler(), xs...);
    runtime->run_until_idle();
    REQUIRE_MESSAGE(r.ok(), r.error_text());
    return *r.value;
  }
  std::size_t alarm_index_size() {
    auto entries = runtime->scan_index("dorm.alarms");
    REQUIRE(entries.ok());
    return entries->size();
  }
};

}  // namespace

TEST_CASE("alarms: fire at their due time; named alarms are independent; moves and deletes hold") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  f.ask("x", set_atom::value, std::string(""), t0 + 1000);
  f.ask("x", set_atom::value, std::string("a"), t0 + 2000);
  f.ask("x", set_atom::value, std::string("b"), t0 + 3000);
  f.ask("x", set_atom::value, std::string("d"), t0 + 2500);
  f.ask("x", set_atom::value, std::string("a"), t0 + 5000);  // moved
  CHECK(f.ask("x", del_atom::value, std::string("b")).get_as<bool>(0));
  CHECK(f.ask("x", get_atom::value, std::string("a")).get_as<std::int64_t>(0) == t0 + 5000);
  // A set and a delete inside failed turns change nothing.
  Reply failed_set, failed_del;
  f.runtime->request(f.handle("alarmed", "x"), failed_set.handler(), setfail_atom::value,
                     std::string("c"), t0 + 1500);
  f.runtime->request(f.handle("alarmed", "x"), failed_del.handler(), delfail_atom::value,
                     std::string("d"));
  f.runtime->run_until_idle();
  CHECK_FALSE(failed_set.ok());
  CHECK_FALSE(failed_del.ok());
  CHECK(f.ask("x", get_atom::value, std::string("c")).get_as<std::int64_t>(0) == -1);

  f.run_until(t0 + 10'000);
  REQUIRE(f.world.firings.size() == 3);
  std::vector<std::pair<std::string, std::int64_t>> fired;
  for (auto& w : f.world.firings) {
    CHECK(w.actual == w.scheduled);  // on time, to the millisecond
    CHECK(w.attempt == 1);
    fired.emplace_back(w.alarm, w.scheduled - t0);
  }
  CHECK(fired == std::vector<std::pair<std::string, std::int64_t>>{{"", 1000}, {"d", 2500}, {"a", 5000}});
  CHECK(f.ask("x", get_atom::value, std::string("a")).get_as<std::int64_t>(0) == -1);  // cleared
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 1;
}

TEST_CASE("alarms: moving an alarm reads no index, and neither does its firing while the scheduler's window holds it") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  for (int i = 0; i < 20; ++i) f.ask(dorm::testing::numbered("o", i), set_atom::value, std::string("idle"), t0 + 60'000);
  f.runtime->run_until_idle();
  const auto scans_before = f.alarm_scans.count();
  // 1,000 re-arms, each later than the last, as a busy session's idle alarm would be: none of
  // them may make the scheduler scan (a scan per re-arm is what went quadratic under load).
  for (int round = 1; round <= 50; ++round) {
    for (int i = 0; i < 20; ++i) {
      f.ask(dorm::testing::numbered("o", i), set_atom::value, std::string("idle"), t0 + 60'000 + round * 10);
    }
  }
  f.runtime->run_until_idle();
  CHECK(f.alarm_scans.count() == scans_before);
  CHECK(f.world.firings.empty());
  // Each alarm fires once, at its last due time, from the scheduler's memory: the 20
  // alarms fit in its window, which it read whole at start (an empty index).
  f.run_until(t0 + 60'000 + 50 * 10);
  CHECK(f.world.firings.size() == 20);
  for (const auto& firing : f.world.firings) CHECK(firing.scheduled == t0 + 60'000 + 500);
  CHECK(f.alarm_scans.count() == scans_before);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 20;
}

TEST_CASE("alarms: re-armed earlier fires at the earlier time, re-armed later only at the later one, deleted never") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  const auto scans_before = f.alarm_scans.count();
  f.ask("x", set_atom::value, std::string("earlier"), t0 + 60'000);
  f.ask("x", set_atom::value, std::string("earlier"), t0 + 1'000);
  f.ask("y", set_atom::value, std::string("later"), t0 + 1'000);
  f.ask("y", set_atom::value, std::string("later"), t0 + 30'000);
  f.ask("z", set_atom::value, std::string("deleted"), t0 + 2'000);
  CHECK(f.ask("z", del_atom::value, std::string("deleted")).get_as<bool>(0));
  f.run_until(t0 + 120'000);
  REQUIRE(f.world.firings.size() == 2);
  CHECK(f.world.firings[0].alarm == "earlier");
  CHECK(f.world.firings[0].actual == t0 + 1'000);
  CHECK(f.world.firings[1].alarm == "later");
  CHECK(f.world.firings[1].actual == t0 + 30'000);
  CHECK(f.alarm_scans.count() == scans_before);  // all from the scheduler's memory
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 3;
}

TEST_CASE("alarms: beyond the scheduler's window, 10,000 re-arms read nothing and the firings read the index a page at a time") {
  RuntimeOptions options;
  options.alarm_window = 8;
  AlarmFixture f(options);
  const std::int64_t t0 = f.clock.now_ms();
  constexpr int kObjects = 100;
  auto object = [](int o) { return dorm::testing::numbered("o", o); };
  for (int o = 0; o < kObjects; ++o) f.ask(object(o), set_atom::value, std::string("idle"), t0 + 60'000 + o);
  const auto scans_before = f.alarm_scans.count();
  // Each re-arm moves one alarm later: out of the window (8 entries) and into the part of
  // the index only the store holds.
  constexpr int kRounds = 100;
  for (int round = 1; round <= kRounds; ++round) {
    for (int o = 0; o < kObjects; ++o) {
      f.ask(object(o), set_atom::value, std::string("idle"), t0 + 60'000 + round * 1'000 + o);
    }
  }
  CHECK(f.alarm_scans.count() == scans_before);
  CHECK(f.world.firings.empty());
  // Every alarm fires once, at its last time, in due order; the scheduler read the index
  // in pages of at most 8, so at least 100 / 8 times, and about no more.
  const std::int64_t last = t0 + 60'000 + kRounds * 1'000;
  f.run_until(last + kObjects);
  REQUIRE(f.world.firings.size() == static_cast<std::size_t>(kObjects));
  for (int o = 0; o < kObjects; ++o) {
    CAPTURE(o);
    CHECK(f.world.firings[static_cast<std::size_t>(o)].object == f.runtime->id_from_name("alarmed", object(o)).to_string());
    CHECK(f.world.firings[static_cast<std::size_t>(o)].actual == last + o);
  }
  auto scans = f.alarm_scans.count() - scans_before;
  CHECK(scans >= (kObjects + 7) / 8);
  CHECK(scans <= (kObjects + 7) / 8 + 2);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = kObjects;
}

TEST_CASE("alarms: a restart reads the stored alarms into the scheduler's window with one scan") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  for (int o = 0; o < 10; ++o) {
    f.ask(dorm::testing::numbered("o", o), setmany_atom::value, 5, t0 + 1'000 + o, std::int64_t{100});
  }
  f.expected_active = 10;
  const auto scans_before = f.alarm_scans.count();
  f.restart();
  f.expected_active = 0;
  f.runtime->run_until_idle();
  f.run_until(t0 + 1'000);
  CHECK(f.world.firings.size() == 1);
  f.run_until(t0 + 2'000);
  REQUIRE(f.world.firings.size() == 50);
  for (const auto& firing : f.world.firings) CHECK(firing.actual == firing.scheduled);
  // The first tick after the restart read the whole index (50 entries, one page); nothing
  // since needed the store.
  CHECK(f.alarm_scans.count() - scans_before == 1);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 10;
}

TEST_CASE("alarms: a set whose commit was applied but reported failed still fires; such a delete does not bring it back") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  auto failing_ask = [&](std::string_view name, auto... xs) {
    f.faulty.fail_commit_after_durable(1);
    Reply r;
    f.runtime->request(f.handle("alarmed", name), r.handler(), xs...);
    f.runtime->run_until_idle();
    CHECK_FALSE(r.ok());  // the turn failed, as far as its sender knows
  };
  failing_ask("x", set_atom::value, std::string("kept"), t0 + 1'000);
  f.ask("y", set_atom::value, std::string("gone"), t0 + 2'000);
  failing_ask("y", del_atom::value, std::string("gone"));
  f.run_until(t0 + 10'000);
  // The store has what the failed commits wrote: x's alarm fired; y's was deleted, and its
  // scheduled delivery found no alarm (a stale delivery, not a firing).
  REQUIRE(f.world.firings.size() == 1);
  CHECK(f.world.firings[0].alarm == "kept");
  CHECK(f.world.firings[0].actual == t0 + 1'000);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 2;
}

TEST_CASE("alarms: an alarm committed early in an on_start that then fails still fires") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  int fail_start = 1;
  REQUIRE(f.runtime->register_namespace("startalarm", [&] {
    return std::make_unique<StartAlarmed>(&f.world, &fail_start, t0 + 1'000);
  }).ok());
  Reply r;
  f.runtime->request(f.handle("startalarm", "s"), r.handler(), get_atom::value, std::string());
  f.runtime->run_until_idle();
  CHECK(fail_start == 0);  // the first on_start failed after committing the alarm
  f.run_until(t0 + 5'000);
  REQUIRE(f.world.firings.size() == 1);
  CHECK(f.world.firings[0].alarm == "s");
  CHECK(f.world.firings[0].actual == t0 + 1'000);
  f.expected_active = 1;
}

TEST_CASE("alarms: a time in the past fires as soon as the turn commits") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  f.ask("x", set_atom::value, std::string("late"), t0 - 60'000);
  f.runtime->run_until_idle();
  REQUIRE(f.world.firings.size() == 1);
  CHECK(f.world.firings[0].actual == t0);
  f.expected_active = 1;
}

TEST_CASE("alarms: a handler that sets its alarm again keeps the new time") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  f.world.rearm_once["r"] = 10'000;
  f.ask("x", set_atom::value, std::string("r"), t0 + 1000);
  f.run_until(t0 + 60'000);
  REQUIRE(f.world.firings.size() == 2);
  CHECK(f.world.firings[0].actual == t0 + 1000);
  CHECK(f.world.firings[1].actual == t0 + 11'000);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 1;
}

namespace {

// Runs one always-failing alarm to exhaustion and returns its attempts' times.
std::vector<Firing> exhaust(std::uint64_t seed) {
  RuntimeOptions options;
  options.seed = seed;
  AlarmFixture f(options);
  const std::int64_t t0 = f.clock.now_ms();
  f.world.fail_first["f"] = 1000;
  f.ask("x", set_atom::value, std::string("f"), t0 + 1000);
  f.run_until(t0 + 600'000);
  CHECK(f.ask("x", get_atom::value, std::string("f")).get_as<std::int64_t>(0) == -1);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 1;
  return f.world.firings;
}

}  // namespace

TEST_CASE("alarms: failures retry after 2..64 s with seeded jitter, then the exhausted hook") {
  auto a = exhaust(1);
  REQUIRE(a.size() == 8);  // 7 attempts, then the hook
  for (int i = 0; i < 7; ++i) {
    CHECK(a[static_cast<std::size_t>(i)].attempt == i + 1);
    CHECK_FALSE(a[static_cast<std::size_t>(i)].exhausted);
    CHECK(a[static_cast<std::size_t>(i)].scheduled == a[0].scheduled);
  }
  for (int i = 1; i < 7; ++i) {
    std::int64_t delay = a[static_cast<std::size_t>(i)].actual - a[static_cast<std::size_t>(i - 1)].actual;
    std::int64_t base = alarm_retry_base_ms(i);
    CAPTURE(i);
    CAPTURE(delay);
    CHECK(delay >= base * 3 / 4);
    CHECK(delay <= base * 5 / 4);
  }
  CHECK(a[7].exhausted);
  CHECK(a[7].attempt == 7);
  CHECK(a[7].actual == a[6].actual);  // right after the last attempt failed

  auto same = exhaust(1);
  auto other = exhaust(2);
  REQUIRE(same.size() == 8);
  REQUIRE(other.size() == 8);
  std::vector<std::int64_t> ta, tsame, tother;
  for (std::size_t i = 0; i < 8; ++i) {
    ta.push_back(a[i].actual - a[0].actual);
    tsame.push_back(same[i].actual - same[0].actual);
    tother.push_back(other[i].actual - other[0].actual);
  }
  CHECK(ta == tsame);
  CHECK(ta != tother);
}

TEST_CASE("alarms: an alarm that fails twice then succeeds is delivered three times, then cleared") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  f.world.fail_first["g"] = 2;
  f.ask("x", set_atom::value, std::string("g"), t0 + 1000);
  f.run_until(t0 + 600'000);
  REQUIRE(f.world.firings.size() == 3);
  CHECK(f.world.firings[2].attempt == 3);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 1;

  // Telemetry: three alarm spans (two failed), a reset after each failure, and an
  // activation for each instance, the later two after a reset.
  using namespace dorm::trace;
  auto alarms = f.tracer.spans_named(kAlarmSpan);
  auto resets = f.tracer.spans_named(kResetSpan);
  auto activations = f.tracer.spans_named(kActivationSpan);
  REQUIRE(alarms.size() == 3);
  REQUIRE(resets.size() == 2);
  REQUIRE(activations.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& span = alarms[i];
    CAPTURE(i);
    CHECK(std::get<std::string>(*span.attribute(attr::kAlarmName)) == "g");
    CHECK(std::get<std::int64_t>(*span.attribute(attr::kAlarmAttempt)) == static_cast<std::int64_t>(i + 1));
    CHECK(std::get<std::int64_t>(*span.attribute(attr::kAlarmScheduledMs)) == t0 + 1000);
    CHECK(std::get<std::int64_t>(*span.attribute(attr::kAlarmLatenessMs)) ==
          f.world.firings[i].actual - (t0 + 1000));
    CHECK(span.status == (i < 2 ? SpanStatus::error : SpanStatus::ok));
    CHECK((span.event("exception") != nullptr) == (i < 2));
    // Each delivery links to the activation that ran it.
    REQUIRE(span.links.size() == 1);
    CHECK(span.links[0].context == activations[i].context);
  }
  CHECK(std::get<std::string>(*activations[0].attribute(attr::kStartReason)) == "first");
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(resets[i].status == SpanStatus::error);
    REQUIRE(resets[i].event("exception") != nullptr);
    CHECK(std::get<std::string>(resets[i].event("exception")->attributes[0].value) == "dorm.ObjectReset");
    CHECK(std::get<std::string>(*resets[i].attribute(attr::kResetReason)).find("fails on purpose") !=
          std::string::npos);
    // A reset is a child of the activation it ended; the next activation says why it started.
    CHECK(resets[i].context.trace_id == activations[i].context.trace_id);
    CHECK(resets[i].parent_span_id == activations[i].context.span_id);
    CHECK(std::get<std::string>(*activations[i + 1].attribute(attr::kStartReason)) == "after_reset");
    CHECK(std::get<std::int64_t>(*activations[i + 1].attribute(attr::kEpochActivation)) >
          std::get<std::int64_t>(*activations[i].attribute(attr::kEpochActivation)));
  }
}

TEST_CASE("alarms: 100k stored alarms survive a restart and each fires once, on time") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  constexpr int kObjects = 1000;
  constexpr int kPerObject = 100;
  // Object o's alarm n<k> is due at t0 + 1 s * (k * kObjects + o + 1): all distinct, and
  // each object's first alarm comes due only after (o + 1) seconds.
  for (int o = 0; o < kObjects; ++o) {
    f.ask(dorm::testing::numbered("o", o), setmany_atom::value, kPerObject,
          t0 + 1000 * (o + 1), std::int64_t{1000} * kObjects);
  }
  CHECK(f.alarm_index_size() == static_cast<std::size_t>(kObjects * kPerObject));
  f.expected_active = kObjects;
  f.restart();
  f.world.activations = 0;
  f.runtime->run_until_idle();
  CHECK(f.world.activations == 0);  // start read the index only: nothing was due

  f.run_until(t0 + 1000 * 10);
  CHECK(f.world.activations == 10);  // only the objects whose first alarm came due
  f.run_until(t0 + std::int64_t{1000} * kObjects * kPerObject + 1000);
  REQUIRE(f.world.firings.size() == static_cast<std::size_t>(kObjects * kPerObject));
  std::set<std::pair<std::string, std::string>> seen;
  for (auto& w : f.world.firings) {
    CHECK(w.actual == w.scheduled);
    CHECK(w.attempt == 1);
    seen.emplace(w.object, w.alarm);
  }
  CHECK(seen.size() == static_cast<std::size_t>(kObjects * kPerObject));  // each exactly once
  CHECK(f.alarm_index_size() == 0);
}

TEST_CASE("alarms: alarms overdue at start are released at the configured rate") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  for (int o = 0; o < 100; ++o) {
    f.ask(dorm::testing::numbered("o", o), setmany_atom::value, 100, t0 + 1 + o, std::int64_t{100});
  }
  f.expected_active = 100;
  // The runtime is down while all 10k come due.
  f.stop();
  f.clock.advance(20'000);
  RuntimeOptions options;
  options.overdue_alarm_rate = 200;
  f.start(options);
  f.add_namespace();
  const std::int64_t started = f.clock.now_ms();
  f.runtime->run_until_idle();
  f.run_until(started + 1000);
  CHECK(f.world.firings.size() <= 200);
  CHECK(f.world.firings.size() >= 150);  // and the rate is not far below what was asked
  f.run_until(started + 51'000);
  CHECK(f.world.firings.size() == 10'000);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 100;
}

TEST_CASE("alarms: alarms due when the runtime starts wait for their namespace and fire on their first attempt") {
  AlarmFixture f;
  const std::int64_t t0 = f.clock.now_ms();
  for (int o = 0; o < 5; ++o) {
    f.ask(dorm::testing::numbered("o", o), setmany_atom::value, 2, t0 + 100 + o, std::int64_t{10});
  }
  f.expected_active = 5;
  f.stop();
  f.clock.advance(1'000);
  // All at once: the start itself hands out what is due, before any namespace exists.
  RuntimeOptions options;
  options.overdue_alarm_rate = 0;
  f.start(options);
  f.runtime->run_until_idle();
  CHECK(f.world.firings.empty());
  CHECK(f.runtime->stats().alarms_late == 10);  // held back, and counted as late
  CHECK_FALSE(f.runtime->next_timer_ms().has_value());  // no retry was scheduled
  f.add_namespace();
  f.runtime->run_until_idle();
  REQUIRE(f.world.firings.size() == 10);
  for (const auto& firing : f.world.firings) {
    CHECK(firing.attempt == 1);
    CHECK(firing.actual == t0 + 1'000);
  }
  CHECK(f.runtime->stats().alarms_late == 0);
  CHECK(f.alarm_index_size() == 0);
  f.expected_active = 5;
}
