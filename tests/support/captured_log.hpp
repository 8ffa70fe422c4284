// CapturedLog — the log lines written during its lifetime, for tests that check what was
// logged. It swaps spdlog's default logger, which spdlog reads without a lock on every log
// call: declare it before (so it outlives) any server, runtime or thread whose lines it
// reads, and never swap it while such a thread runs (ThreadSanitizer reports the swap).
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dorm::testing {

class CapturedLog {
 public:
  CapturedLog() { spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_)); }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  // The last 1,000 lines that contain `needle` (an event name, a field), oldest first.
  std::vector<std::string> lines(std::string_view needle) const {
    std::vector<std::string> out;
    for (auto& line : sink_->last_formatted()) {
      if (line.find(needle) != std::string::npos) out.push_back(std::move(line));
    }
    return out;
  }

  // How many of them there are.
  int count(std::string_view needle) const { return static_cast<int>(lines(needle).size()); }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
  std::shared_ptr<spdlog::logger> previous_ = spdlog::default_logger();
};

}  // namespace dorm::testing
