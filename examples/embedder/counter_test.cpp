// The Counter on a virtual-time runtime over the example's own backend: counting, a window
// closed by the alarm, and both surviving a crash and a reopened store.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <dorm/runtime/clock.hpp>
#include <dorm/runtime/runtime.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "append_log_backend.hpp"
#include "counter.hpp"

namespace {

constexpr std::int64_t kWindowMs = 60'000;

// A fresh directory for one test case's store, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "counter-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// One store and one runtime on a virtual clock that outlives restarts, as a deploy does.
struct World {
  TempDir dir;
  dorm::VirtualClock clock;
  std::unique_ptr<example::AppendLogBackend> store;
  std::unique_ptr<dorm::Runtime> runtime;

  World() { open(); }
  ~World() {
    runtime.reset();
    store.reset();
  }

  void open() {
    auto opened = example::AppendLogBackend::open((dir.path / "store.log").string(),
                                                  dorm::storage::Durability::process);
    REQUIRE_MESSAGE(opened.ok(), (opened.ok() ? "" : opened.error().describe()));
    store = std::move(opened).value();
    start();
  }
  void start() {
    dorm::RuntimeOptions options;
    options.virtual_clock = &clock;
    auto started = dorm::Runtime::start(*store, options);
    REQUIRE_MESSAGE(started.ok(), (started.ok() ? "" : started.error().describe()));
    runtime = std::move(started).value();
    REQUIRE(example::register_counter(*runtime, kWindowMs).ok());
  }
  // The process dies: only committed turns survive, no hook runs. Then the store is closed
  // and opened again from its file, and a new runtime starts on it.
  void crash_and_reopen() {
    runtime->crash();
    runtime.reset();
    store.reset();
    open();
  }

  // Sends one message and runs the runtime until the reply is in.
  template <class... Ts>
  caf::message ask(const std::string& name, Ts... xs) {
    auto handle = runtime->get(runtime->id_from_name(example::kCounterNamespace, name));
    REQUIRE(handle.ok());
    std::optional<caf::expected<caf::message>> reply;
    runtime->request(*handle, [&](caf::expected<caf::message> r) { reply = std::move(r); }, xs...);
    runtime->run_until_idle();
    REQUIRE(reply.has_value());
    REQUIRE_MESSAGE(static_cast<bool>(*reply), "the counter failed its turn");
    return **reply;
  }
  std::int64_t add(const std::string& name, std::int64_t by) {
    auto reply = ask(name, example::add_atom::value, by);
    REQUIRE(reply.match_elements<std::int64_t>());
    return reply.get_as<std::int64_t>(0);
  }
  struct Snapshot {
    std::int64_t count, previous, windows;
  };
  Snapshot read(const std::string& name) {
    auto reply = ask(name, example::read_atom::value);
    REQUIRE(reply.match_elements<std::string>());
    rapidjson::Document json;
    json.Parse(reply.get_as<std::string>(0).c_str());
    REQUIRE(json.IsObject());
    return {json["count"].GetInt64(), json["previous"].GetInt64(), json["windows"].GetInt64()};
  }

  // Fires the runtime's timers due up to `ms` from now, in order, then moves the clock there.
  void advance(std::int64_t ms) {
    std::int64_t until = clock.now_ms() + ms;
    while (auto at = runtime->next_timer_ms()) {
      if (*at > until) break;
      runtime->run_until_next_timer();
    }
    if (clock.now_ms() < until) clock.advance(until - clock.now_ms());
    runtime->run_until_idle();
  }
};

}  // namespace

TEST_CASE("counters count by name, each on its own") {
  World w;
  CHECK(w.add("a", 2) == 2);
  CHECK(w.add("a", 3) == 5);
  CHECK(w.add("b", -1) == -1);
  auto a = w.read("a");
  CHECK(a.count == 5);
  CHECK(a.previous == 0);
  CHECK(a.windows == 0);
}

TEST_CASE("the alarm closes the window at its end, and the next add opens another") {
  World w;
  w.add("a", 4);
  w.advance(kWindowMs - 1);
  CHECK(w.read("a").count == 4);  // one millisecond before the end: still open
  w.advance(1);
  auto closed = w.read("a");
  CHECK(closed.count == 0);
  CHECK(closed.previous == 4);
  CHECK(closed.windows == 1);

  w.add("a", 1);  // a new window, ending a full window from now
  w.advance(kWindowMs / 2);
  CHECK(w.read("a").count == 1);
  w.advance(kWindowMs / 2);
  auto again = w.read("a");
  CHECK(again.previous == 1);
  CHECK(again.windows == 2);
}

TEST_CASE("after a crash the count is there, and an alarm due while down fires at the start") {
  World w;
  w.add("a", 7);
  w.add("b", 1);
  w.advance(kWindowMs / 2);
  w.crash_and_reopen();
  CHECK(w.read("a").count == 7);

  // Down past the window's end: the stored alarm fires once the runtime is up again.
  w.runtime->crash();
  w.runtime.reset();
  w.clock.advance(kWindowMs);
  w.start();
  w.advance(1'000);  // overdue alarms are released at a bounded rate after a start
  auto a = w.read("a");
  CHECK(a.count == 0);
  CHECK(a.previous == 7);
  CHECK(a.windows == 1);
  CHECK(w.read("b").previous == 1);
}

TEST_CASE("a window of zero is refused") {
  World w;
  auto refused = example::register_counter(*w.runtime, 0);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == dorm::ErrorCode::invalid_argument);
}
