// Records the last int it received: a plain CAF actor for timer and scheduler tests.
#pragma once

#include <memory>

class Recorder : public caf::event_based_actor {
 public:
  Recorder(caf::actor_config& cfg, std::shared_ptr<int> last)
      : caf::event_based_actor(cfg), last_(std::move(last)) {}
  caf::behavior make_behavior() override {
    return {[this](int value) { *last_ = value; }};
  }

 private:
  std::shared_ptr<int> last_;
};
