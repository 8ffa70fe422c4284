// StreamBody: the writer/connection hand-off of a streamed response (http_server.hpp).
// No Beast here, so the TSan build covers it.
#include "dorm/mcp/http_server.hpp"

namespace dorm::mcp {

std::size_t StreamBody::write(std::string_view bytes) {
  std::function<void()> wake;
  std::size_t unsent = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || ending_ || aborting_) return 0;
    queued_.append(bytes);
    unsent = queued_.size() + in_flight_;
    wake = wake_;
  }
  if (wake) wake();
  return unsent;
}

void StreamBody::end() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || ending_ || aborting_) return;
    ending_ = true;
    wake = wake_;
  }
  if (wake) wake();
}

void StreamBody::abort() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    // An end already asked for is kept: the response finishes cleanly (the connection
    // bounds how long that final write may take).
    if (closed_ || aborting_ || ending_) return;
    aborting_ = true;
    queued_.clear();
    wake = wake_;
  }
  if (wake) {
    wake();
  } else {
    // No connection attached (yet): nothing to wait for.
    close();
  }
}

std::size_t StreamBody::unsent() const {
  std::lock_guard lock(mutex_);
  return queued_.size() + in_flight_;
}

bool StreamBody::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void StreamBody::on_closed(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      on_closed_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void StreamBody::attach(std::function<void()> wake) {
  {
    std::lock_guard lock(mutex_);
    wake_ = wake;
  }
  wake();
}

StreamBody::Pending StreamBody::take() {
  std::lock_guard lock(mutex_);
  Pending p;
  if (aborting_) {
    p.abort = true;
    return p;
  }
  p.bytes = std::move(queued_);
  queued_.clear();
  in_flight_ += p.bytes.size();
  p.end = ending_;
  return p;
}

bool StreamBody::aborted() const {
  std::lock_guard lock(mutex_);
  return aborting_;
}

void StreamBody::sent(std::size_t n) {
  std::lock_guard lock(mutex_);
  in_flight_ -= std::min(n, in_flight_);
}

void StreamBody::close() {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    queued_.clear();
    in_flight_ = 0;
    wake_ = nullptr;
    callbacks = std::move(on_closed_);
    on_closed_.clear();
  }
  for (auto& fn : callbacks) fn();
}

}  // namespace dorm::mcp
