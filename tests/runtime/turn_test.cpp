// Turns: input and output gates, resets, start order, limits, mailbox bound, indexes.
#include <doctest/doctest.h>

#include <optional>
#include <thread>
#include <vector>

#include "runtime_fixture.hpp"
#include "numbered.hpp"

using namespace dorm;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;
using dorm::testing::must;

namespace {

using add_atom = caf::atom_constant<caf::atom("add")>;
using get_atom = caf::atom_constant<caf::atom("get")>;
using boom_atom = caf::atom_constant<caf::atom("boom")>;
using putkey_atom = caf::atom_constant<caf::atom("putkey")>;
using putval_atom = caf::atom_constant<caf::atom("putval")>;
using index_atom = caf::atom_constant<caf::atom("index")>;
using boots_atom = caf::atom_constant<caf::atom("boots")>;


// What the test objects report, in order.
struct Journal {
  std::vector<std::string> events;
};

// A counter kept in storage; records its starts and handled messages in a Journal.
class Counter : public DurableObject {
 public:
  explicit Counter(Journal* journal) : journal_(journal) {}

  void on_start(StartReason reason) override {
    journal_->events.push_back(std::string("start:") + to_string(reason));
    auto stored = get("count");
    must(stored.ok(), "get failed");
    count_ = *stored ? std::stoi(**stored) : 0;
    // Count boots durably and commit at once: this must survive a failing first turn.
    auto boots = get("boots");
    int n = *boots ? std::stoi(**boots) : 0;
    must(put("boots", std::to_string(n + 1)).ok(), "storage call failed");
    must(commit().ok(), "storage call failed");
  }

  caf::behavior behavior() override {
    return {
        [this](add_atom, int n) -> int {
          journal_->events.push_back(dorm::testing::numbered("add:", n));
          count_ += n;
          must(put("count", std::to_string(count_)).ok(), "storage call failed");
          return count_;
        },
        [this](get_atom) -> int {
          journal_->events.push_back("get");
          return count_;
        },
        [this](boots_atom) -> int { return std::stoi(**get("boots")); },
        [this](boom_atom) -> int {
          must(put("count", "999").ok(), "storage call failed");
          throw std::runtime_error("boom");
        },
        // A valid write, then one that breaks a limit: neither may commit.
        [this](putkey_atom, int key_size) -> std::string {
          count_ = key_size;
          must(put("count", std::to_string(key_size)).ok(), "storage call failed");
          auto r = put(std::string(static_cast<std::size_t>(key_size), 'k'), "v");
          return r.ok() ? "ok" : r.error().message;
        },
        [this](putval_atom, int value_size) -> std::string {
          count_ = value_size;
          must(put("count", std::to_string(value_size)).ok(), "storage call failed");
          auto r = put("big", std::string(static_cast<std::size_t>(value_size), 'v'));
          return r.ok() ? "ok" : r.error().message;
        },
        [this](index_atom, std::string entry) -> int {
          must(index_put("things", entry, id().to_string()).ok(), "storage call failed");
          count_ += 1;
          must(put("count", std::to_string(count_)).ok(), "storage call failed");
          return count_;
        },
    };
  }

 private:
  Journal* journal_;
  int count_ = 0;
};

struct CounterFixture : RuntimeFixture {
  Journal journal;
  explicit CounterFixture(RuntimeOptions options = {}) : RuntimeFixture(std::move(options)) {
    REQUIRE(runtime
                ->register_namespace("counter",
                                     [this] { return std::make_unique<Counter>(&journal); })
                .ok());
  }
};

}  // namespace

TEST_CASE("turns: three messages to an inactive object run after on_start, in send order") {
  CounterFixture f;
  auto c = f.handle("counter", "a");
  Reply r1, r2, r3;
  f.runtime->request(c, r1.handler(), add_atom::value, 1);
  f.runtime->request(c, r2.handler(), add_atom::value, 2);
  f.runtime->request(c, r3.handler(), get_atom::value);
  CHECK(f.journal.events.empty());  // nothing runs before the test runs the scheduler
  f.runtime->run_until_idle();
  CHECK(f.journal.events == std::vector<std::string>{"start:first", "add:1", "add:2", "get"});
  CHECK(r1.as_int() == 1);
  CHECK(r2.as_int() == 3);
  CHECK(r3.as_int() == 3);
  f.expected_active = 1;
}

TEST_CASE("output gate: a failed commit releases nothing, resets the object, fails the queue") {
  CounterFixture f;
  auto c = f.handle("counter", "a");
  Reply first;
  f.runtime->request(c, first.handler(), add_atom::value, 1);
  f.runtime->run_until_idle();
  REQUIRE(first.as_int() == 1);

  f.faulty.fail_commit();  // the next commit fails and applies nothing
  Reply failed, queued1, queued2;
  f.runtime->request(c, failed.handler(), add_atom::value, 5);
  f.runtime->request(c, queued1.handler(), get_atom::value);
  f.runtime->request(c, queued2.handler(), add_atom::value, 7);
  f.runtime->run_until_idle();
  // The reply that depended on the lost write never shows; the sender sees the failure.
  CHECK(failed.error_text().find("turn_failed") != std::string::npos);
  CHECK(failed.error_text().find("commit failed") != std::string::npos);
  CHECK(queued1.error_text().find("object_reset") != std::string::npos);
  CHECK(queued2.error_text().find("object_reset") != std::string::npos);
  CHECK(f.runtime->active_objects() == 0);

  // The next message activates a fresh instance that sees the last committed state.
  Reply after;
  f.runtime->request(c, after.handler(), get_atom::value);
  f.runtime->run_until_idle();
  CHECK(after.as_int() == 1);
  CHECK(f.journal.events.back() == "get");
  CHECK(std::count(f.journal.events.begin(), f.journal.events.end(), "start:after_reset") == 1);
  f.expected_active = 1;
}

TEST_CASE("a full store: the turn fails with no_space, keeps nothing, and the object resets") {
  CounterFixture f;
  auto c = f.handle("counter", "a");
  Reply first, refused, after;
  f.runtime->request(c, first.handler(), add_atom::value, 1);
  f.runtime->run_until_idle();
  REQUIRE(first.as_int() == 1);
  f.faulty.set_no_space(true);
  f.runtime->request(c, refused.handler(), add_atom::value, 5);
  f.runtime->run_until_idle();
  // Its own error, so callers can tell a full disk from a broken store.
  CHECK(refused.error_text().find("dorm::no_space") != std::string::npos);
  CHECK(f.runtime->active_objects() == 0);
  f.faulty.set_no_space(false);
  f.runtime->request(c, after.handler(), get_atom::value);
  f.runtime->run_until_idle();
  CHECK(after.as_int() == 1);
  f.expected_active = 1;
}

TEST_CASE("output gate: commit durable but reported failed: no reply, the next activation sees it") {
  CounterFixture f;
  auto c = f.handle("counter", "a");
  Reply first, lost, after;
  f.runtime->request(c, first.handler(), add_atom::value, 1);
  f.runtime->run_until_idle();
  f.faulty.fail_commit_after_durable();
  f.runtime->request(c, lost.handler(), add_atom::value, 10);
  f.runtime->run_until_idle();
  CHECK(lost.error_text().find("turn_failed") != std::string::npos);
  f.runtime->request(c, after.handler(), get_atom::value);
  f.runtime->run_until_idle();
  CHECK(after.as_int() == 11);
  f.expected_active = 1;
}

TEST_CASE("on_start's early commit is durable even when the first turn then fails") {
  CounterFixture f;
  auto c = f.handle("counter", "a");
  Reply boom, boots, count;
  f.runtime->request(c, boom.handler(), boom_atom::value);
  f.runtime->run_until_idle();
  CHECK(boom.error_text().find("handler threw: boom") != std::string::npos);
  f.runtime->request(c, boots.handler(), boots_atom::value);
  f.runtime->request(c, count.handler(), get_atom::value);
  f.runtime->run_until_idle();
  CHECK(boots.as_int() == 2);  // both on_starts committed, the failed turn did not undo it
  CHECK(count.as_int() == 0);  // the failed turn's write of 999 never landed
  f.expected_active = 1;
}

TEST_CASE("limits: an oversized key or value is refused with limit and size; the turn goes on and commits the rest") {
  CounterFixture f;
  auto c = f.handle("counter", "a");
  Reply key_ok, key_big, value_big, count, boots;
  f.runtime->request(c, key_ok.handler(), putkey_atom::value, 2048);
  f.runtime->run_until_idle();
  REQUIRE(key_ok.ok());
  CHECK(key_ok.value->get_as<std::string>(0) == "ok");

  // The object gets the error as a value and answers with it: the turn is not failed.
  f.runtime->request(c, key_big.handler(), putkey_atom::value, 2049);
  f.runtime->run_until_idle();
  REQUIRE(key_big.ok());
  CHECK(key_big.value->get_as<std::string>(0) == "key of 2049 bytes exceeds the limit of 2048 bytes");

  f.runtime->request(c, value_big.handler(), putval_atom::value, 131073);
  f.runtime->run_until_idle();
  REQUIRE(value_big.ok());
  CHECK(value_big.value->get_as<std::string>(0) ==
        "value of 131073 bytes exceeds the limit of 131072 bytes");

  f.runtime->request(c, count.handler(), get_atom::value);
  f.runtime->request(c, boots.handler(), boots_atom::value);
  f.runtime->run_until_idle();
  CHECK(count.as_int() == 131073);  // the last turn's other write stands
  CHECK(boots.as_int() == 1);       // the object was never reset (a reset starts it again)
  f.expected_active = 1;
}

TEST_CASE("mailbox bound: with 8 accepted and none finished, the 9th is refused as overloaded") {
  RuntimeOptions options;
  options.mailbox_bound = 8;
  CounterFixture f(options);
  auto c = f.handle("counter", "a");
  std::vector<Reply> replies(9);
  // The object's turn cannot run until the test runs the scheduler: all 9 arrive while it
  // is blocked.
  for (auto& r : replies) f.runtime->request(c, r.handler(), add_atom::value, 1);
  CHECK(replies[8].arrived);
  CHECK(replies[8].error_text().find("overloaded") != std::string::npos);
  for (int i = 0; i < 8; ++i) CHECK_FALSE(replies[static_cast<std::size_t>(i)].arrived);
  f.runtime->run_until_idle();
  for (int i = 0; i < 8; ++i) CHECK(replies[static_cast<std::size_t>(i)].as_int() == i + 1);
  // Once the queue drained, messages are accepted again.
  Reply again;
  f.runtime->request(c, again.handler(), get_atom::value);
  f.runtime->run_until_idle();
  CHECK(again.as_int() == 8);
  f.expected_active = 1;
}

TEST_CASE("runtime indexes: entries appear with their turn's commit and not after a failed one") {
  CounterFixture f;
  auto a = f.handle("counter", "a");
  auto b = f.handle("counter", "b");
  Reply ra, rb, b_started;
  f.runtime->request(a, ra.handler(), index_atom::value, std::string("alpha"));
  f.runtime->request(b, b_started.handler(), get_atom::value);  // b's on_start commits now
  f.runtime->run_until_idle();
  REQUIRE(ra.ok());
  REQUIRE(b_started.ok());
  f.faulty.fail_commit();
  f.runtime->request(b, rb.handler(), index_atom::value, std::string("beta"));
  f.runtime->run_until_idle();
  CHECK_FALSE(rb.ok());
  auto entries = f.runtime->scan_index("things");
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].key == "alpha");
  CHECK((*entries)[0].value == f.runtime->id_from_name("counter", "a").to_string());
  // scan_index reads storage only: with no object active it still answers.
  f.runtime.reset();
  f.start();
  CHECK(f.runtime->active_objects() == 0);
  auto again = f.runtime->scan_index("things", "a", 10);
  REQUIRE(again.ok());
  CHECK(again->size() == 1);
  CHECK(f.runtime->active_objects() == 0);
}

namespace {

using effect_atom = caf::atom_constant<caf::atom("effect")>;
using timer_atom = caf::atom_constant<caf::atom("timer")>;

// Schedules effects and timers; `fail` makes the scheduling turn fail after scheduling.
class Effects : public DurableObject {
 public:
  explicit Effects(std::vector<std::string>* seen) : seen_(seen) {}
  caf::behavior behavior() override {
    return {
        [this](effect_atom, bool fail) -> int {
          must(put("k", "v").ok(), "put failed");
          after_commit([this] {
            // Runs only after the commit: the write is already in the store.
            seen_->push_back("effect");
          });
          if (fail) throw std::runtime_error("turn fails after scheduling");
          return 0;
        },
        [this](timer_atom, int ms, bool fail) -> int {
          after(std::chrono::milliseconds(ms), [this, ms] {
            must(put("timer", std::to_string(ms)).ok(), "put failed");
            seen_->push_back(dorm::testing::numbered("timer:", ms));
          });
          if (fail) throw std::runtime_error("turn fails after scheduling");
          return 0;
        },
    };
  }

 private:
  std::vector<std::string>* seen_;
};

}  // namespace

TEST_CASE("output gate: after_commit effects run after the commit and never for a failed turn") {
  RuntimeFixture f;
  std::vector<std::string> seen;
  REQUIRE(f.runtime->register_namespace("fx", [&] { return std::make_unique<Effects>(&seen); }).ok());
  Reply ok;
  f.runtime->request(f.handle("fx", "a"), ok.handler(), effect_atom::value, false);
  f.runtime->run_until_idle();
  CHECK(ok.ok());
  CHECK(seen == std::vector<std::string>{"effect"});
  Reply failed;
  f.runtime->request(f.handle("fx", "b"), failed.handler(), effect_atom::value, true);
  f.runtime->run_until_idle();
  CHECK_FALSE(failed.ok());
  CHECK(seen.size() == 1);
  f.expected_active = 1;
}

TEST_CASE("timers: after() runs a turn at its time on the runtime's clock, not for a failed turn") {
  RuntimeFixture f;
  std::vector<std::string> seen;
  REQUIRE(f.runtime->register_namespace("fx", [&] { return std::make_unique<Effects>(&seen); }).ok());
  Reply r1, r2;
  f.runtime->request(f.handle("fx", "a"), r1.handler(), timer_atom::value, 5000, false);
  f.runtime->request(f.handle("fx", "b"), r2.handler(), timer_atom::value, 1000, true);
  f.runtime->run_until_idle();
  CHECK(r1.ok());
  CHECK_FALSE(r2.ok());
  f.clock.advance(4999);
  f.runtime->run_until_idle();
  CHECK(seen.empty());
  f.clock.advance(1);
  f.runtime->run_until_idle();
  CHECK(seen == std::vector<std::string>{"timer:5000"});
  CHECK(f.runtime->run_until_next_timer() == false);  // the failed turn's timer was never armed
  f.expected_active = 1;
}

namespace {

using inbox_atom = caf::atom_constant<caf::atom("inbox")>;

// Hands its Inbox to a thread the runtime does not own; what the thread posts is written
// to storage as turns of the object ("fail" throws in that turn instead).
class Posted : public DurableObject {
 public:
  explicit Posted(std::optional<Inbox>* out) : out_(out) {}
  caf::behavior behavior() override {
    return {
        [this](inbox_atom) -> int {
          *out_ = inbox();
          return 0;
        },
    };
  }
  void store(const std::string& value) {
    auto seen = get("seen").value_or_throw().value_or("");
    must(put("seen", seen + value + ";").ok(), "put failed");
    if (value == "fail") throw std::runtime_error("a posted turn fails");
  }
  std::string seen() { return get("seen").value_or_throw().value_or(""); }

 private:
  std::optional<Inbox>* out_;
};

}  // namespace

TEST_CASE("inbox: posts from another thread run as turns in order; after a reset they are dropped") {
  RuntimeFixture f;
  std::optional<Inbox> inbox;
  Posted* live = nullptr;
  REQUIRE(f.runtime->register_namespace("px", [&] {
    auto object = std::make_unique<Posted>(&inbox);
    live = object.get();
    return object;
  }).ok());
  Reply got;
  f.runtime->request(f.handle("px", "a"), got.handler(), inbox_atom::value);
  f.runtime->run_until_idle();
  REQUIRE(got.ok());
  REQUIRE(inbox.has_value());
  Posted* first = live;
  std::thread poster([&, box = *inbox] {
    for (const char* v : {"one", "two", "three"}) box.post([first, v] { first->store(v); });
  });
  poster.join();
  // The posts wait for the test thread (virtual time): nothing ran yet.
  CHECK(f.runtime->wait_for_posts(std::chrono::seconds(5)));
  f.runtime->run_until_idle();
  std::string seen;
  inbox->post([&] { seen = first->seen(); });
  f.runtime->run_until_idle();
  CHECK(seen == "one;two;three;");
  // A posted turn that throws resets the object like any failed turn: its write is gone,
  // and later posts to the dead activation are dropped.
  inbox->post([first] { first->store("fail"); });
  f.runtime->run_until_idle();
  bool ran = false;
  inbox->post([&] { ran = true; });
  f.runtime->run_until_idle();
  CHECK_FALSE(ran);
  // A fresh activation sees what committed: the failed turn's write is not there.
  Reply again;
  f.runtime->request(f.handle("px", "a"), again.handler(), inbox_atom::value);
  f.runtime->run_until_idle();
  REQUIRE(again.ok());
  REQUIRE(live != first);
  Posted* second = live;
  inbox->post([&, second] { seen = second->seen(); });
  f.runtime->run_until_idle();
  CHECK(seen == "one;two;three;");
  f.expected_active = 1;
}
