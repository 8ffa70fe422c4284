// Notifier: coroutines on the I/O thread wait for a condition that callbacks on the same
// thread change (a call settled, a child printed a line), bounded by a deadline.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <set>

namespace dorm::deploy_sim {

class Notifier {
 public:
  explicit Notifier(boost::asio::any_io_executor executor) : executor_(std::move(executor)) {}

  // Wakes every coroutine in wait().
  void notify() {
    for (auto* t : waiting_) t->cancel();
  }

  // Returns on the next notify(), or at `deadline`.
  boost::asio::awaitable<void> wait(std::chrono::steady_clock::time_point deadline) {
    boost::asio::steady_timer timer(executor_, deadline);
    waiting_.insert(&timer);
    co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    waiting_.erase(&timer);
  }

  // Returns once holds() is true (true), or when `deadline` passes first (false).
  template <class Condition>
  boost::asio::awaitable<bool> until(Condition holds,
                                     std::chrono::steady_clock::time_point deadline) {
    while (!holds()) {
      if (std::chrono::steady_clock::now() >= deadline) co_return false;
      co_await wait(deadline);
    }
    co_return true;
  }

 private:
  boost::asio::any_io_executor executor_;
  std::set<boost::asio::steady_timer*> waiting_;
};

// Waits until `when` on the current coroutine's executor.
inline boost::asio::awaitable<void> sleep_until(std::chrono::steady_clock::time_point when) {
  auto executor = co_await boost::asio::this_coro::executor;
  boost::asio::steady_timer timer(executor, when);
  co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
}

}  // namespace dorm::deploy_sim
