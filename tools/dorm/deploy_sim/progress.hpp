// The progress of `dorm deploy-sim` on stderr: on a terminal one line rewritten in place
// (row, deploy i/D, calls settled, elapsed); otherwise plain lines at each step, so a log
// file or CI output stays readable.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace dorm::deploy_sim {

class Progress {
 public:
  Progress(std::FILE* out, bool terminal);

  // A row begins: its label ("reaper, kill, retry 500 ms, gap 0 ms") and its calls.
  void row(std::string label, int calls);
  // Deploy `i` of `of` begins (its calls are being started).
  void deploy(int i, int of);
  // `n` of the row's calls have their outcome.
  void settled(int n);
  // A line of its own (a warning); the terminal line is redrawn under it.
  void note(const std::string& text);
  // Redraws the terminal line (the elapsed time moves on); called periodically.
  void tick();
  // Clears the terminal line before the table is printed.
  void finish();

  bool terminal() const { return terminal_; }

 private:
  std::string line() const;
  void draw();

  std::FILE* out_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::string row_;
  int calls_ = 0;
  int deploy_ = 0;
  int deploys_ = 0;
  int settled_ = 0;
};

}  // namespace dorm::deploy_sim
