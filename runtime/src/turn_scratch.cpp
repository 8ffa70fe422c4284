#include "turn_scratch.hpp"

namespace dorm::detail {
namespace {

constexpr std::size_t kKeptPerThread = 4;

thread_local std::vector<std::unique_ptr<TurnScratch>> pool;

}  // namespace

void TurnScratch::clear() {
  batch.clear();
  batch.bind(nullptr);
  failure.reset();
  alarm_changes.clear();
}

std::unique_ptr<TurnScratch> take_turn_scratch() {
  if (pool.empty()) return std::make_unique<TurnScratch>();
  auto scratch = std::move(pool.back());
  pool.pop_back();
  return scratch;
}

void give_turn_scratch(std::unique_ptr<TurnScratch> scratch) {
  if (!scratch || pool.size() >= kKeptPerThread) return;
  scratch->clear();
  pool.push_back(std::move(scratch));
}

}  // namespace dorm::detail
