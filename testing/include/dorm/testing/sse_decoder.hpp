// SseDecoder — the events of a `text/event-stream` body, read the way the official
// TypeScript SDK client reads them (it parses with eventsource-parser 3), so a simulated
// client decides what the real one would about resuming a dropped stream.
//
// Where eventsource-parser differs from the WHATWG EventSource algorithm, and why it
// matters here:
//  - an event is dispatched only if it had at least one `data` line; an empty one counts
//    (`data: ` is how a priming event carries its id), so an `id` alone is dropped;
//  - an `id` belongs to its own event only and is not remembered for the next one.
// `retry` values are reported as read (the SDK keeps the last one for every later
// reconnect of the session), whether or not their event is dispatched; a value that is
// not all digits is ignored. Lines end with LF, CRLF or CR; a line starting with ':' is a
// comment (the keep-alive); an unknown field, and an `id` holding a NUL, are ignored; a
// leading byte order mark is dropped. Nothing is ever an error: a malformed line is
// skipped, as the SDK skips it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dorm::testing {

struct SseEvent {
  std::optional<std::string> id;  // the event's `id` field, if it had one
  std::string event;              // the `event` field; empty means "message"
  std::string data;               // its `data` lines joined with LF

  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

// What one feed() decoded.
struct SseChunk {
  std::vector<SseEvent> events;           // complete events, in order
  std::optional<std::int64_t> retry_ms;   // the last valid `retry` field among the bytes
};

class SseDecoder {
 public:
  // Decodes the next bytes of the body. A line whose end has not arrived waits for the
  // next call, and so does an event whose blank line has not.
  SseChunk feed(std::string_view bytes);

 private:
  void line(std::string_view text, SseChunk& out);

  std::string partial_;      // the start of a line whose end has not arrived
  bool at_start_ = true;     // nothing read yet: a byte order mark may come
  bool after_cr_ = false;    // the last line ended with CR: a following LF belongs to it
  std::optional<std::string> id_;
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace dorm::testing
