// RequestPipeline — keeps K requests to durable objects in flight, for `dorm bench runtime`.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>

#include "bench_stats.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::bench {

// Sends message_of(i) to handle_of(i) for i in [first, first + count) through
// Runtime::deliver, `window` at a time. Each reply sends the next request from the thread
// that delivered it, as a bare CAF client's reply handler does.
class RequestPipeline {
 public:
  RequestPipeline(Runtime& runtime, std::function<ObjectHandle(int)> handle_of,
                  std::function<caf::message(int)> message_of, int first, int count)
      : runtime_(runtime),
        handle_of_(std::move(handle_of)),
        message_of_(std::move(message_of)),
        first_(first),
        count_(count) {}

  // Returns the seconds until every reply arrived. Throws if a request failed; ends the
  // process if the objects stop answering for two minutes.
  double run(int window) {
    auto answered = done_.get_future();
    auto start = std::chrono::steady_clock::now();
    if (count_ == 0) done_.set_value();
    for (int i = 0; i < window; ++i) send_next();
    if (answered.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      give_up_waiting("durable objects stopped answering");
    }
    double seconds = seconds_since(start);
    if (errors_.load() > 0) {
      throw std::runtime_error(std::to_string(errors_.load()) + " of " + std::to_string(count_) +
                               " requests failed, first: " + first_error_);
    }
    return seconds;
  }

 private:
  void send_next() {
    int k = sent_.fetch_add(1);
    if (k >= count_) return;
    runtime_.deliver(handle_of_(first_ + k), message_of_(first_ + k),
                     [this](caf::expected<caf::message> reply) {
                       if (!reply && errors_.fetch_add(1) == 0) {
                         first_error_ = caf::to_string(reply.error());
                       }
                       send_next();
                       // Last: once every reply is counted nothing touches `this` again.
                       if (received_.fetch_add(1) + 1 == count_) done_.set_value();
                     });
  }

  Runtime& runtime_;
  std::function<ObjectHandle(int)> handle_of_;
  std::function<caf::message(int)> message_of_;
  int first_, count_;
  std::atomic<int> sent_{0}, received_{0}, errors_{0};
  std::string first_error_;  // written by the first failure only, read after the end
  std::promise<void> done_;
};

}  // namespace dorm::bench
