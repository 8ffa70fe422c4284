// What slot.cpp (running executions) and slot_bridge.cpp (the callbacks user code reaches
// through the prelude) share: one execution's state and a few V8 string helpers.
#pragma once

#include <v8.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "slot.hpp"

namespace dorm::engine::sandbox {

// At most this many timers may be pending at once; setTimeout throws past it.
inline constexpr std::size_t kMaxPendingTimers = 10'000;
// Tool arguments travel in one frame.
inline constexpr std::size_t kMaxToolArgsBytes = 8u << 20;
inline constexpr std::size_t kMaxToolPathBytes = 1024;

inline std::string mib(std::uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

inline std::string utf8(v8::Isolate* isolate, v8::Local<v8::Value> value) {
  v8::String::Utf8Value text(isolate, value);
  return *text ? std::string(*text, static_cast<std::size_t>(text.length())) : std::string();
}

inline v8::Local<v8::String> v8_string(v8::Isolate* isolate, std::string_view s) {
  return v8::String::NewFromUtf8(isolate, s.data(), v8::NewStringType::kNormal,
                                 static_cast<int>(s.size()))
      .ToLocalChecked();
}

inline void throw_type_error(v8::Isolate* isolate, std::string_view message) {
  isolate->ThrowException(v8::Exception::TypeError(v8_string(isolate, message)));
}

// One execution's state, on the slot thread.
struct Slot::Execution {
  std::uint64_t exec = 0;
  std::string id;
  std::string source;
  Limits limits;
  Journal journal;
  // Replay: the recorded calls by sequence number, the recorded timer sets and clears by id,
  // and the input entries in order with a cursor.
  std::vector<const ToolCallEntry*> recorded_calls;
  std::map<std::uint32_t, const TimerSetEntry*> recorded_sets;
  std::set<std::uint32_t> recorded_clears;
  std::vector<const JournalEntry*> inputs;
  std::size_t next_input = 0;

  std::uint32_t calls_made = 0;
  std::map<std::uint32_t, v8::Global<v8::Promise::Resolver>> outstanding;
  std::set<std::uint32_t> timers;  // set and neither fired nor cleared
  std::uint32_t last_timer = 0;
  std::uint64_t log_bytes = 0;
  std::uint64_t output_bytes = 0;
  bool replaying() const { return next_input < inputs.size(); }
};

}  // namespace dorm::engine::sandbox
