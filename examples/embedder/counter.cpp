#include "counter.hpp"

#include <dorm/runtime/durable_object.hpp>

#include <charconv>
#include <memory>
#include <stdexcept>
#include <string>

namespace example {
namespace {

class Counter final : public dorm::DurableObject {
 public:
  explicit Counter(std::int64_t window_ms) : window_ms_(window_ms) {}

  caf::behavior behavior() override {
    return {
        [this](add_atom, std::int64_t by) -> std::int64_t {
          std::int64_t count = load("count") + by;
          put("count", std::to_string(count)).value_or_throw();
          // The first add of a window opens it: the alarm is its end. Part of this turn's
          // batch, so the count and the alarm are stored together or not at all.
          if (!get_alarm().value_or_throw()) {
            set_alarm(clock().now_ms() + window_ms_).value_or_throw();
          }
          return count;
        },
        [this](read_atom) -> std::string {
          return R"({"count":)" + std::to_string(load("count")) + R"(,"previous":)" +
                 std::to_string(load("previous")) + R"(,"windows":)" +
                 std::to_string(load("windows")) + "}";
        },
    };
  }

  // A storage failure throws (value_or_throw) and so fails the turn: the runtime resets
  // the object, the sender gets an error, and nothing the turn wrote is kept.

  // The window closes. If this turn fails, the alarm is delivered again (with backoff), and
  // nothing of this attempt is kept: a window is never counted twice.
  void on_alarm(const dorm::AlarmInfo&) override {
    put("previous", std::to_string(load("count"))).value_or_throw();
    put("count", "0").value_or_throw();
    put("windows", std::to_string(load("windows") + 1)).value_or_throw();
  }

 private:
  std::int64_t load(std::string_view key) {
    auto stored = get(key).value_or_throw();
    if (!stored) return 0;
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(stored->data(), stored->data() + stored->size(), value);
    if (ec != std::errc() || end != stored->data() + stored->size()) {
      throw std::runtime_error("counter: stored " + std::string(key) + " is not a number");
    }
    return value;
  }

  const std::int64_t window_ms_;
};

}  // namespace

dorm::Result<void> register_counter(dorm::Runtime& runtime, std::int64_t window_ms) {
  if (window_ms <= 0) {
    return dorm::Error{dorm::ErrorCode::invalid_argument,
                       "counter window must be at least 1 ms, got " + std::to_string(window_ms)};
  }
  return runtime.register_namespace(
      kCounterNamespace, [window_ms] { return std::make_unique<Counter>(window_ms); });
}

}  // namespace example
