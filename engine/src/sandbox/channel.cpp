#include "channel.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace dorm::engine::sandbox {

void Channel::write_all(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);
    done += static_cast<std::size_t>(n);
  }
}

void Channel::send(const wire::Message& message) {
  std::string bytes;
  wire::encode(message, bytes);
  std::lock_guard lock(mutex_);
  write_all(bytes);
}

bool Channel::try_send(const wire::Message& message) {
  std::string bytes;
  wire::encode(message, bytes);
  if (!mutex_.try_lock_for(std::chrono::milliseconds(200))) return false;
  write_all(bytes);
  mutex_.unlock();
  return true;
}

}  // namespace dorm::engine::sandbox
