// The virtual clock drives CAF's timers; slow turns are logged.
#include <doctest/doctest.h>

#include "captured_log.hpp"
#include "numbered.hpp"
#include "runtime_fixture.hpp"
#include "recorder.hpp"

using namespace dorm;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;

namespace {

struct Echo : DurableObject {
  caf::behavior behavior() override {
    return {[](int x) { return x; }};
  }
};

// Captures spdlog output for the duration of a test.
using dorm::testing::CapturedLog;

}  // namespace

TEST_CASE("virtual clock: advancing it moves the runtime's CAF timers with durable time") {
  RuntimeFixture f;
  auto last = std::make_shared<int>(0);
  auto recorder = f.runtime->system().spawn<Recorder>(last);
  auto start = f.clock.now_ms();
  caf::delayed_anon_send(recorder, std::chrono::hours(1), 7);
  f.runtime->run_until_idle();
  f.clock.advance(59 * 60 * 1000);
  f.runtime->run_until_idle();
  CHECK(*last == 0);
  f.clock.advance(60 * 1000);
  f.runtime->run_until_idle();
  CHECK(*last == 7);
  CHECK(f.clock.now_ms() - start == 3'600'000);
  caf::anon_send_exit(recorder, caf::exit_reason::user_shutdown);
  f.runtime->run_until_idle();
}

TEST_CASE("slow turns are logged with namespace and id, quick ones are not") {
  CapturedLog log;
  for (auto threshold : {std::chrono::milliseconds(0), std::chrono::milliseconds(3'600'000)}) {
    RuntimeOptions options;
    options.slow_turn = threshold;
    RuntimeFixture f(options);
    REQUIRE(f.runtime->register_namespace("echo", [] { return std::make_unique<Echo>(); }).ok());
    Reply r;
    f.runtime->request(f.handle("echo", "a"), r.handler(), 5);
    f.runtime->run_until_idle();
    CHECK(r.as_int() == 5);
    f.expected_active = 1;
  }
  CHECK(log.count("slow_turn ns=echo id=") == 1);
}

TEST_CASE("virtual clock: subscribers hear of an advance by rank, whenever they subscribed") {
  VirtualClock clock;
  std::vector<std::string> heard;
  auto b = clock.subscribe([&](std::int64_t ms) { heard.push_back(dorm::testing::numbered("b", ms)); }, 1);
  auto a = clock.subscribe([&](std::int64_t ms) { heard.push_back(dorm::testing::numbered("a", ms)); }, 0);
  clock.advance(5);
  CHECK(heard == std::vector<std::string>{"a5", "b5"});
  // "a" leaves and comes back (a restarted node): it is still told first.
  clock.unsubscribe(a);
  a = clock.subscribe([&](std::int64_t ms) { heard.push_back(dorm::testing::numbered("a", ms)); }, 0);
  heard.clear();
  clock.advance(7);
  CHECK(heard == std::vector<std::string>{"a7", "b7"});
  clock.unsubscribe(a);
  clock.unsubscribe(b);
  heard.clear();
  clock.advance(1);
  CHECK(heard.empty());
  CHECK(clock.now_ms() == 1'700'000'000'013);
}
