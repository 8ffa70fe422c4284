// A session's stream ids, unique by construction, so that opening a stream reads nothing
// from the store.
//
// The n-th stream a session ever opens gets the id `salt XOR n`. XOR with a fixed salt is a
// bijection, so different n give different ids; the salt (64 bits from the CSPRNG, drawn
// when the session opens its first stream) keeps ids from reading as a count. The store
// keeps the salt and a reservation R under the session's key `n`: every n below R may have
// been handed out, none at or above it has been. An activation hands out n from memory up to
// its reservation and extends it by kStreamIdBlock when it runs out, writing the new R in
// the batch of the stream that needed it. So n never repeats:
//   - a stream becomes visible only when its turn's batch commits, and that batch carries
//     any reservation the stream's n needed;
//   - a turn that fails resets its object (runtime.md), so memory never runs ahead of a
//     reservation that was not stored;
//   - a new activation starts at the stored R, skipping whatever the last one reserved but
//     did not use (at most kStreamIdBlock - 1 ids, out of 2^64).
// Sessions made before `n` existed had random stream ids; their first StreamIds draws a salt
// like a new session's, and an old id can equal a new one with the odds of two random
// 64-bit numbers (2^-64 per pair), only while the old stream is kept (15 minutes after it
// finished).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dorm/mcp/event_log.hpp"
#include "dorm/result.hpp"

namespace dorm::mcp {

// Ids reserved by one write: a busy session writes `n` once per this many streams.
inline constexpr std::uint64_t kStreamIdBlock = 1024;

// What `n` holds.
struct StreamIdReservation {
  std::uint64_t salt = 0;
  std::uint64_t reserved = 0;  // every n below this may have been handed out

  // "<salt> <reserved>", each 16 lower-case hex digits.
  std::string encode() const;
  // Errors: corruption when `text` is not what encode() writes.
  static Result<StreamIdReservation> decode(std::string_view text);
};

class StreamIds {
 public:
  explicit StreamIds(SessionStore& store) : store_(store) {}

  // The next stream id. Reads `n` once per activation (through the store view, so a cached
  // read after the first) and writes it once per kStreamIdBlock ids. Errors: the store's,
  // corruption for a malformed `n`, internal if the CSPRNG fails to draw a salt.
  Result<std::uint64_t> next();

  // Forgets what was loaded: the next call reads `n` again (after the session's keys were
  // erased, say).
  void forget() { loaded_.reset(); }

 private:
  struct Loaded {
    StreamIdReservation stored;
    std::uint64_t next = 0;  // the next n to hand out; stored.reserved bounds it
  };
  SessionStore& store_;
  std::optional<Loaded> loaded_;
};

}  // namespace dorm::mcp
