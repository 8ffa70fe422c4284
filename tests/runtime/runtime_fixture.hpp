// A runtime on virtual time over an in-memory store wrapped in a FaultyBackend, with the
// teardown checks every runtime test wants: nothing left queued, no activation the test
// did not expect.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/runtime/tracing.hpp"
#include "dorm/storage/faulty_backend.hpp"
#include "dorm/storage/memory_backend.hpp"

namespace dorm::testing {

// Object code runs inside CAF, where a doctest REQUIRE must not throw its own exception
// type: fail the turn with a std::exception instead.
inline void must(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

// Captures one reply.
struct Reply {
  bool arrived = false;
  caf::expected<caf::message> value{caf::error{}};

  ReplyHandler handler() {
    return [this](caf::expected<caf::message> r) {
      arrived = true;
      value = std::move(r);
    };
  }
  bool ok() const { return arrived && static_cast<bool>(value); }
  int as_int() const {
    REQUIRE(ok());
    REQUIRE(value->match_elements<int>());
    return value->get_as<int>(0);
  }
  std::string error_text() const {
    REQUIRE(arrived);
    REQUIRE_FALSE(static_cast<bool>(value));
    return describe(value.error());
  }
};

// Counts the scans of the alarm index: the alarm scheduler's reads of it, apart from the
// objects' own reads (each object's storage cache lists its keys at its first read).
class AlarmIndexScans final : public storage::BackendWrapper {
 public:
  explicit AlarmIndexScans(storage::Backend& target)
      : storage::BackendWrapper(target), prefix_(keys::index_prefix(keys::kAlarmIndex)) {}
  Result<std::vector<storage::KeyValue>> scan(const storage::ScanOptions& options) override {
    if (options.start.starts_with(prefix_)) ++count_;
    return storage::BackendWrapper::scan(options);
  }
  // Virtual-time runtimes only (the count is not synchronised).
  std::uint64_t count() const { return count_; }

 private:
  std::string prefix_;
  std::uint64_t count_ = 0;
};

class RuntimeFixture {
 public:
  storage::MemoryBackend memory;
  storage::FaultyBackend faulty{memory};
  AlarmIndexScans alarm_scans{faulty};  // what the runtime uses
  VirtualClock clock;
  // Every fixture runtime traces: tests may check the spans its work produced.
  trace::RecordingTracer tracer{&clock};
  std::unique_ptr<Runtime> runtime;
  std::size_t expected_active = 0;  // checked at teardown, before the runtime stops

  explicit RuntimeFixture(RuntimeOptions options = {}) { start(std::move(options)); }

  void start(RuntimeOptions options = {}) {
    options.virtual_clock = &clock;
    if (!options.tracer) options.tracer = &tracer;
    auto rt = Runtime::start(alarm_scans, std::move(options));
    REQUIRE_MESSAGE(rt.ok(), (rt.ok() ? "" : rt.error().describe()));
    runtime = std::move(rt).value();
  }

  // Stops the runtime (objects get on_stop(shutdown)) and checks it was left clean.
  void stop() {
    if (!runtime) return;
    CHECK(runtime->run_until_idle() == 0);  // nothing queued that the test did not run
    CHECK(runtime->active_objects() == expected_active);
    runtime.reset();
  }

  ~RuntimeFixture() { stop(); }

  // Fires CAF timers in order up to `until` on the virtual clock, then moves the clock
  // there. A timer armed by a turn counts from that turn's time, as on a real clock.
  void run_until(std::int64_t until) {
    while (auto at = runtime->next_timer_ms()) {
      if (*at > until) break;
      runtime->run_until_next_timer();
    }
    if (clock.now_ms() < until) {
      clock.advance(until - clock.now_ms());
      runtime->run_until_idle();
    }
  }

  ObjectHandle handle(std::string_view ns, std::string_view name) {
    auto h = runtime->get(runtime->id_from_name(ns, name));
    REQUIRE(h.ok());
    return *h;
  }
};

}  // namespace dorm::testing
