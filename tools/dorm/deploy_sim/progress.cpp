#include "progress.hpp"

namespace dorm::deploy_sim {

Progress::Progress(std::FILE* out, bool terminal)
    : out_(out), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

std::string Progress::line() const {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char text[96];
  std::snprintf(text, sizeof text, ": deploy %d/%d, %d/%d calls settled, %.1f s elapsed", deploy_,
                deploys_, settled_, calls_, elapsed);
  return "deploy-sim [" + row_ + "]" + text;
}

void Progress::draw() {
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s", line().c_str());
  } else {
    std::fprintf(out_, "%s\n", line().c_str());
  }
  std::fflush(out_);
}

void Progress::row(std::string label, int calls) {
  row_ = std::move(label);
  calls_ = calls;
  deploy_ = 0;
  deploys_ = 0;
  settled_ = 0;
  if (terminal_) draw();
}

void Progress::deploy(int i, int of) {
  deploy_ = i;
  deploys_ = of;
  draw();
}

void Progress::settled(int n) {
  settled_ = n;
  if (terminal_) {
    draw();
  } else if (n == calls_) {
    draw();  // plain output: one line when the row's last call settles
  }
}

void Progress::note(const std::string& text) {
  if (terminal_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "deploy-sim: %s\n", text.c_str());
  if (terminal_) draw();
  std::fflush(out_);
}

void Progress::tick() {
  if (terminal_ && !row_.empty()) draw();
}

void Progress::finish() {
  if (terminal_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
}

}  // namespace dorm::deploy_sim
