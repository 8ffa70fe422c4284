// The effect journal of one execution.
//
// Everything that enters an isolate from outside is an input event here, in the order the
// execution consumed it: tool results (which is also the order in which concurrent results
// arrived), timer firings, and with each of them the host time the code sees from then on
// (`Date.now()`). The random seed and the start time are fixed at start. What the code
// asked for is recorded too (tool calls with their arguments, timers set and cleared), so a
// replay can check that the code takes the same path.
//
// Replay: an execution started with a journal runs the same code and is answered from the
// journal instead of the host: its tool calls are matched by sequence number, path and
// arguments, its timers by id and delay; input events are delivered in recorded order, each
// once the code has made the call (or set the timer) it answers. After the last input the
// execution is live. Since a worker runs an execution to quiescence (no pending microtasks)
// between two inputs, the same inputs in the same order give the same execution. A mismatch
// fails the execution with nondeterministic_replay.
//
// The binary layout of a journal is the wire encoding of its entries (wire.hpp); docs/engine.md
// describes it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace dorm::engine {

// Output: the code called `tools.<path>(args)`; `seq` counts calls from 1.
struct ToolCallEntry {
  std::uint32_t seq = 0;
  std::string path;
  std::string args_json;
  bool operator==(const ToolCallEntry&) const = default;
};

// Input: the result of call `seq`, as the host delivered it at `time_ms`. When !ok,
// `value_json` is a JSON string: the message of the Error the call's promise rejects with.
struct ToolResultEntry {
  std::uint32_t seq = 0;
  bool ok = true;
  std::string value_json;
  std::int64_t time_ms = 0;
  bool operator==(const ToolResultEntry&) const = default;
};

// Output: setTimeout with timer id `timer` (counted from 1) and delay `delay_ms`, received
// by the host at `time_ms`.
struct TimerSetEntry {
  std::uint32_t timer = 0;
  std::int64_t delay_ms = 0;
  std::int64_t time_ms = 0;
  bool operator==(const TimerSetEntry&) const = default;
};

// Output: clearTimeout of a timer that had not fired.
struct TimerClearEntry {
  std::uint32_t timer = 0;
  bool operator==(const TimerClearEntry&) const = default;
};

// Input: timer `timer` fired at host time `time_ms`.
struct TimerFiredEntry {
  std::uint32_t timer = 0;
  std::int64_t time_ms = 0;
  bool operator==(const TimerFiredEntry&) const = default;
};

using JournalEntry =
    std::variant<ToolCallEntry, ToolResultEntry, TimerSetEntry, TimerClearEntry, TimerFiredEntry>;

struct Journal {
  std::int64_t start_ms = 0;  // Date.now() until the first input
  std::uint64_t seed = 0;     // seeds Math.random
  std::vector<JournalEntry> entries;
  bool operator==(const Journal&) const = default;
};

// What a journal leaves open: calls without a result and timers neither fired nor cleared,
// in order. The host answers these after a replay.
struct OpenEffects {
  std::vector<ToolCallEntry> calls;
  std::vector<TimerSetEntry> timers;
};
OpenEffects open_effects(const Journal& journal);

}  // namespace dorm::engine
