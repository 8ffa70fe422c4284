// What an engine observer hears on its owner's thread while the owner is inside
// Pool::start. start() may wait there for a quick outcome (engine::PoolOptions::
// start_polls_for_outcome) and report it on the calling thread, before the owner has set
// up what the report needs (the execution handle, a resumption's answer). An observer that
// owns a StartHold keeps such reports instead of posting them as turns of their own; the
// owner runs them, in order, at the end of the turn that started the execution (one turn,
// one commit). Reports from any other thread, or after release(), are not held.
#pragma once

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace dorm::actors {

template <class Report>
class StartHold {
 public:
  // On the owner's thread, right before Pool::start.
  void hold() { holder_.store(std::this_thread::get_id()); }
  // On the owner's thread, right after Pool::start: what was held, in order.
  std::vector<Report> release() {
    holder_.store(std::thread::id{});
    return std::move(held_);
  }
  // Whether the calling thread holds reports now (between its hold() and release()).
  bool holding() const { return holder_.load() == std::this_thread::get_id(); }
  // Only while holding().
  void keep(Report report) { held_.push_back(std::move(report)); }

 private:
  std::atomic<std::thread::id> holder_{};
  std::vector<Report> held_;  // only touched on the holder's thread
};

}  // namespace dorm::actors
