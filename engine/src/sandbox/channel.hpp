// The worker's end of the socket to the host: frames out, under one lock, from any thread.
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
