// CAF 0.17 on its deterministic test scheduler, driven directly through
// caf::scheduler::test_coordinator (CAF's own test DSL reports to CAF's unit-test engine,
// not to doctest). This is the mechanism every virtual-time runtime test builds on.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include "recorder.hpp"

using namespace std::chrono_literals;

namespace {

caf::actor_system_config testing_config() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.policy", caf::atom("testing"));
  return cfg;
}

// Counts the ints it received.
class Counter : public caf::event_based_actor {
 public:
  Counter(caf::actor_config& cfg, std::shared_ptr<int> count)
      : caf::event_based_actor(cfg), count_(std::move(count)) {}

  caf::behavior make_behavior() override {
    return {[this](int) { ++*count_; }};
  }

 private:
  std::shared_ptr<int> count_;
};

}  // namespace

TEST_CASE("caf test coordinator: a message delayed by 1 h arrives only when 1 h has passed") {
  auto cfg = testing_config();
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());

  auto received = std::make_shared<int>(0);
  auto receiver = sys.spawn<Recorder>(received);
  sched.run();

  caf::delayed_anon_send(receiver, std::chrono::hours(1), 42);
  sched.run();
  CHECK(*received == 0);

  CHECK(sched.advance_time(59min) == 0);  // no timeout is due yet
  sched.run();
  CHECK(*received == 0);

  CHECK(sched.advance_time(1min) == 1);  // exactly the delayed message becomes due
  sched.run();
  CHECK(*received == 42);

  caf::anon_send_exit(receiver, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE("caf test coordinator: nothing runs until the test runs the queue") {
  auto cfg = testing_config();
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());

  auto count = std::make_shared<int>(0);
  auto counter = sys.spawn<Counter>(count);
  sched.run();
  caf::anon_send(counter, 1);
  caf::anon_send(counter, 2);
  CHECK(*count == 0);
  CHECK(sched.run() > 0);
  CHECK(*count == 2);
  CHECK(sched.run() == 0);  // idle: nothing left to run

  caf::anon_send_exit(counter, caf::exit_reason::user_shutdown);
  sched.run();
}
