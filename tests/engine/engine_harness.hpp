// Test helpers for engine suites that run real worker processes: an observer that records
// everything an execution reports and waits (bounded) for it, and a thread-safe clock the
// test moves by hand.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dorm/engine/pool.hpp"
#include "dorm/runtime/clock.hpp"

namespace dorm::engine::testing {

// A clock for pool tests: moves only when the test says so; safe to read from the pool thread.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t start) : now_(start) {}
  std::int64_t now_ms() const override { return now_.load(); }
  void advance(std::int64_t ms) { now_ += ms; }

 private:
  std::atomic<std::int64_t> now_;
};

class Recorder final : public ExecutionObserver {
 public:
  using Answer = std::function<std::optional<std::pair<bool, std::string>>(const ToolCallEntry&)>;

  // `answer` (optional) answers calls as they arrive, on the pool thread; nullopt leaves a
  // call for the test to answer.
  explicit Recorder(Answer answer = nullptr) : answer_(std::move(answer)) {}

  void on_tool_call(const ToolCallEntry& call) override {
    std::shared_ptr<Execution> exec;
    {
      std::lock_guard lock(mutex_);
      calls.push_back(call);
      exec = exec_.lock();
      if (!exec) unanswered_.push_back(call);
    }
    cv_.notify_all();
    if (exec) answer(*exec, call);
  }
  void on_log(wire::LogLevel level, std::string_view text) override {
    std::lock_guard lock(mutex_);
    logs.push_back(format_log_line(level, text));
  }
  void on_emit(std::string_view json) override {
    std::lock_guard lock(mutex_);
    emits.emplace_back(json);
  }
  void on_journal(const JournalEntry& entry) override {
    {
      std::lock_guard lock(mutex_);
      journal.push_back(entry);
    }
    cv_.notify_all();
  }
  void on_completed(std::string_view json) override {
    {
      std::lock_guard lock(mutex_);
      ++endings;
      result = std::string(json);
    }
    cv_.notify_all();
  }
  void on_failed(FailureKind kind, std::string_view message) override {
    {
      std::lock_guard lock(mutex_);
      ++endings;
      failure = std::make_pair(kind, std::string(message));
    }
    cv_.notify_all();
  }

  // Hands over the execution (after start returned) and answers calls that came before it.
  void attach(std::shared_ptr<Execution> exec) {
    std::vector<ToolCallEntry> pending;
    {
      std::lock_guard lock(mutex_);
      exec_ = exec;
      pending.swap(unanswered_);
    }
    for (auto& call : pending) answer(*exec, call);
  }

  bool wait_done(std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return endings > 0; });
  }
  bool wait_calls(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return calls.size() >= n; });
  }
  bool wait_journal(std::function<bool(const std::vector<JournalEntry>&)> pred,
                    std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return pred(journal); });
  }

  FailureKind failure_kind() {
    std::lock_guard lock(mutex_);
    return failure ? failure->first : FailureKind::engine_overloaded;
  }

  std::mutex mutex_;
  std::vector<ToolCallEntry> calls;
  std::vector<std::string> logs;
  std::vector<std::string> emits;
  std::vector<JournalEntry> journal;
  std::optional<std::string> result;
  std::optional<std::pair<FailureKind, std::string>> failure;
  int endings = 0;

 private:
  void answer(Execution& exec, const ToolCallEntry& call) {
    if (!answer_) return;
    if (auto a = answer_(call)) exec.deliver_tool_result(call.seq, a->first, a->second);
  }

  Answer answer_;
  std::weak_ptr<Execution> exec_;  // the execution owns its observer, not the other way
  std::vector<ToolCallEntry> unanswered_;
  std::condition_variable cv_;
};

}  // namespace dorm::engine::testing
