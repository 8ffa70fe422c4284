// The worker's end of one socket to the host (the control socket, or a slot's): frames out,
// under one lock, from any thread (a slot's own, or V8's fatal out-of-memory path).
#pragma once

#include <mutex>
#include <string>

#include "dorm/engine/wire.hpp"

namespace dorm::engine::sandbox {

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}

  int fd() const { return fd_; }

  // Writes one whole frame. If the host is gone (EPIPE, EOF) the process exits: a worker
  // without a host has nothing left to do.
  void send(const wire::Message& message);

  // For the fatal out-of-memory path: like send(), but gives up instead of waiting long for
  // the lock another thread may hold forever. Returns whether the frame went out.
  bool try_send(const wire::Message& message);

 private:
  void write_all(const std::string& bytes);

  int fd_;
  std::timed_mutex mutex_;
};

}  // namespace dorm::engine::sandbox
