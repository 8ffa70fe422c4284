// SseDecoder: the events of a `text/event-stream` body, read exactly as the official
// TypeScript SDK client reads them, so `dorm deploy-sim` sees what that client would see.
//
// The SDK parses with eventsource-parser 3.1, which differs from the WHATWG EventSource
// algorithm in two ways that decide whether a stream can be resumed:
//  - an event is delivered only if it had at least one `data` line (an empty one counts:
//    `data: ` is how a priming event carries its id); an `id` without data is dropped;
//  - an `id` belongs to its own event only; it is not remembered for later events.
// `retry` fields are reported as they are read, whether or not their event is delivered;
// a value that is not all digits is ignored. Lines end with LF, CRLF or CR; comments (a
// line starting with ':') are skipped; a leading byte order mark is dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dorm::deploy_sim {

struct SseEvent {
  std::optional<std::string> id;  // set when the event carried an `id` field
  std::string event;              // the `event` field; empty means "message"
  std::string data;               // `data` lines joined with LF

  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

// What one feed() found.
struct SseChunk {
  std::vector<SseEvent> events;
  std::optional<std::int64_t> retry_ms;  // the last valid `retry` field in the bytes fed
};

class SseDecoder {
 public:
  // Decodes `bytes`, the next part of the body; an incomplete last line waits for the
  // next call. Never fails: malformed lines are skipped as the SDK skips them.
  SseChunk feed(std::string_view bytes);

 private:
  void line(std::string_view text, SseChunk& out);
  void field(std::string_view name, std::string_view value, SseChunk& out);

  std::string pending_;    // the bytes of a line whose end has not arrived
  bool first_ = true;      // a byte order mark may only open the body
  bool cr_ended_ = false;  // the last line ended with CR: an LF right after it is part of it
  std::optional<std::string> id_;
  std::string event_;
  std::string data_;
  int data_lines_ = 0;
};

}  // namespace dorm::deploy_sim
