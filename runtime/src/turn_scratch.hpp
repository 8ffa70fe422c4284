// TurnScratch — what one turn needs only while it runs: its batch, its failure, the alarm
// index changes it made.
//
// A resident object spends nearly all its life between turns, and a turn runs on one
// thread from its first storage call to its commit (the input gate: storage calls are
// synchronous). So this state is not kept per object but lent, for the turn, from a small
// pool per thread (take_turn_scratch); the turn gives it back cleared, with the capacity
// of its containers kept for the next turn on that thread. An object that writes or reads
// nothing in a turn never takes one.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "alarm_records.hpp"
#include "dorm/result.hpp"
#include "turn_batch.hpp"

namespace dorm::detail {

struct TurnScratch {
  TurnBatch batch;
  std::optional<Error> failure;                 // why the turn may not commit
  std::vector<AlarmIndexChange> alarm_changes;  // in batch order

  void clear();
};

// A cleared scratch from this thread's pool (or a new one).
std::unique_ptr<TurnScratch> take_turn_scratch();
// Clears `scratch` and keeps it for this thread's next turn (a few at most are kept: turns
// on one thread do not overlap, except an object driven directly in a test).
void give_turn_scratch(std::unique_ptr<TurnScratch> scratch);

}  // namespace dorm::detail
