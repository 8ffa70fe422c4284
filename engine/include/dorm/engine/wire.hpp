// The engine's wire protocol between the server (host) and an engine worker process.
//
// A frame is a 4-byte little-endian length N followed by N bytes: one type byte, then the
// message's fields in order. Integers are fixed-width little-endian; a string is a 4-byte
// length and that many bytes; a bool is one byte, 0 or 1. Nothing else: no optional fields,
// no padding, and a message that leaves bytes unread is malformed.
//
// Both sides treat what they read as hostile: decode() checks every length against what is
// left, every enum against its values, and the frame size against a cap (kDefaultMaxFrame).
// The host closes the connection and kills the worker on the first error; the worker exits.
// JSON carried in string fields is checked by the host, not here (pool.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "dorm/engine/failure.hpp"
#include "dorm/engine/journal.hpp"
#include "dorm/engine/limits.hpp"
#include "dorm/result.hpp"

namespace dorm::engine::wire {

// 16 MiB: above the largest legal message (an 8 MiB output plus framing), far below
// what would let a worker make the host buffer without bound.
inline constexpr std::size_t kDefaultMaxFrame = 16u << 20;

// Host → worker.
struct Start {
  std::uint64_t exec = 0;  // the host's handle for this execution on this worker
  std::string id;          // the execution's id, for logs
  std::string source;      // as the model wrote it; prepared inside the worker
  Limits limits;
  Journal journal;         // empty entries: a fresh execution
};
struct ToolResult {
  std::uint64_t exec = 0;
  ToolResultEntry result;
};
struct TimerFired {
  std::uint64_t exec = 0;
  TimerFiredEntry fired;
};
struct Cancel {
  std::uint64_t exec = 0;
};
struct Ping {
  std::uint64_t nonce = 0;
};

// Worker → host.
struct Ready {
  std::uint32_t slots = 0;  // executions it runs at once
};
struct ToolCall {
  std::uint64_t exec = 0;
  ToolCallEntry call;
};
enum class LogLevel : std::uint8_t { debug = 0, info = 1, log = 2, warn = 3, error = 4 };
struct Log {
  std::uint64_t exec = 0;
  LogLevel level = LogLevel::log;
  std::string text;
};
struct Emit {
  std::uint64_t exec = 0;
  std::string value_json;
};
struct TimerSet {
  std::uint64_t exec = 0;
  std::uint32_t timer = 0;
  std::int64_t delay_ms = 0;
};
struct TimerClear {
  std::uint64_t exec = 0;
  std::uint32_t timer = 0;
};
struct Completed {
  std::uint64_t exec = 0;
  std::string result_json;
};
struct Failed {
  std::uint64_t exec = 0;
  FailureKind kind = FailureKind::runtime_error;
  std::string message;
};
struct Pong {
  std::uint64_t nonce = 0;
};
// The worker is about to exit (V8's fatal out-of-memory path): start nothing more on it.
struct Exiting {
  std::string reason;
};
// The V8 startup snapshot a worker built for itself, sent on its control socket before its
// Ready (so before any execution's byte reached it) when it was started without one. The
// pool gives it to the workers it starts later, which skip building their own
// (docs/engine.md, "One startup snapshot per pool").
struct Snapshot {
  std::uint64_t hash_seed = 0;  // the V8 --hash-seed its hash tables were made with
  std::uint32_t preparer_context = 0;
  bool has_prelude = false;
  std::uint32_t prelude_context = 0;
  std::uint32_t prelude_hooks = 0;
  std::string blob;
};

using Message = std::variant<Start, ToolResult, TimerFired, Cancel, Ping, Ready, ToolCall, Log,
                             Emit, TimerSet, TimerClear, Completed, Failed, Pong, Exiting,
                             Snapshot>;

// The level's name as console spells it ("warn").
std::string_view to_string(LogLevel level) noexcept;

// Appends one whole frame (length prefix included) to `out`.
void encode(const Message& message, std::string& out);

// Decodes one frame body (type byte and fields, without the length prefix).
Result<Message> decode(std::span<const std::uint8_t> body);

// Journal entries in the same encoding (a 4-byte count, then per entry a type byte and its
// fields): the stored form of a journal.
void encode_journal(const Journal& journal, std::string& out);
Result<Journal> decode_journal(std::span<const std::uint8_t> bytes);

// Splits a byte stream into frame bodies. feed() appends bytes; next() yields one complete
// body at a time. A length over the cap is an error that sticks: the stream cannot be
// resynchronised, so the caller must drop the connection.
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_frame = kDefaultMaxFrame) : max_frame_(max_frame) {}

  void feed(const void* data, std::size_t size);

  // The next complete body; an empty optional-like result (ok with no frame) when more
  // bytes are needed. The span stays valid until the next feed() or next().
  struct Next {
    bool has_frame = false;
    std::span<const std::uint8_t> body;
  };
  Result<Next> next();

  std::size_t buffered() const { return buffer_.size() - offset_; }

 private:
  std::size_t max_frame_;
  std::vector<std::uint8_t> buffer_;
  std::size_t offset_ = 0;
  bool broken_ = false;
};

}  // namespace dorm::engine::wire
