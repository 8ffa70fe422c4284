// SseDecoder reads event streams as the SDK client's parser does: what decides whether a
// dropped stream is resumed (an id on an event with data, the retry hint) must come out
// the same however the bytes are split.
#include <doctest/doctest.h>

#include "dorm/testing/sse_decoder.hpp"

using dorm::testing::SseChunk;
using dorm::testing::SseDecoder;
using dorm::testing::SseEvent;

namespace {

// Feeds `body` in pieces of `step` bytes and collects everything.
SseChunk feed_in_steps(std::string_view body, std::size_t step) {
  SseDecoder decoder;
  SseChunk all;
  for (std::size_t at = 0; at < body.size(); at += step) {
    auto chunk = decoder.feed(body.substr(at, step));
    all.events.insert(all.events.end(), chunk.events.begin(), chunk.events.end());
    if (chunk.retry_ms) all.retry_ms = chunk.retry_ms;
  }
  return all;
}

}  // namespace

TEST_CASE("sse decoder: a priming event, a message and a keep-alive, however the bytes are split") {
  const std::string body =
      "id: 00ab-0\nretry: 500\ndata: \n\n"
      ": keepalive\n\n"
      "id: 00ab-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
  for (std::size_t step : {body.size(), std::size_t{1}, std::size_t{2}, std::size_t{7}}) {
    CAPTURE(step);
    auto all = feed_in_steps(body, step);
    REQUIRE(all.events.size() == 2);
    CHECK(all.events[0] == SseEvent{"00ab-0", "", ""});
    CHECK(all.events[1] == SseEvent{"00ab-1", "message", R"({"jsonrpc":"2.0","id":1,"result":{}})"});
    CHECK(all.retry_ms == 500);
  }
}

TEST_CASE("sse decoder: an event without a data line is not dispatched, its id not kept") {
  SseDecoder decoder;
  auto chunk = decoder.feed("id: lost\n\ndata: x\n\n");
  REQUIRE(chunk.events.size() == 1);
  CHECK_FALSE(chunk.events[0].id.has_value());
  CHECK(chunk.events[0].data == "x");
}

TEST_CASE("sse decoder: CRLF and CR line ends, a CRLF split between reads, and multi-line data") {
  SseDecoder decoder;
  auto first = decoder.feed("data: a\r");
  CHECK(first.events.empty());
  auto second = decoder.feed("\ndata: b\r\r");
  REQUIRE(second.events.size() == 1);
  CHECK(second.events[0].data == "a\nb");
  auto third = decoder.feed("id: 7\r\ndata:no-space\r\n\r\n");
  REQUIRE(third.events.size() == 1);
  CHECK(third.events[0] == SseEvent{"7", "", "no-space"});
}

TEST_CASE("sse decoder: a retry that is not all digits is ignored; an incomplete event waits") {
  SseDecoder decoder;
  auto chunk = decoder.feed("retry: 5s\nretry: -1\ndata: x\n");
  CHECK_FALSE(chunk.retry_ms.has_value());
  CHECK(chunk.events.empty());  // no blank line yet
  chunk = decoder.feed("\n");
  REQUIRE(chunk.events.size() == 1);
  CHECK(decoder.feed("retry: 1500\n").retry_ms == 1500);
}

TEST_CASE("sse decoder: a byte order mark is dropped, even split; unknown fields are ignored") {
  SseDecoder decoder;
  CHECK(decoder.feed("\xEF\xBB").events.empty());
  auto chunk = decoder.feed("\xBF" "data: x\nfoo: bar\nid\n\n");
  REQUIRE(chunk.events.size() == 1);
  // `id` with no colon is the field with an empty value: an id, but an empty one.
  CHECK(chunk.events[0] == SseEvent{"", "", "x"});
}

TEST_CASE("sse decoder: a byte order mark, a comment and every line end, a byte at a time, decode as at once") {
  const std::string body =
      "\xEF\xBB\xBF: keepalive\r\nid: s-1\r\ndata: line one\r\ndata:line two\r\n\r\n"
      "event: other\rdata: x\r\rretry: soon\nretry: 250\n";
  auto at_once = SseDecoder().feed(body);
  auto bytewise = feed_in_steps(body, 1);
  CHECK(bytewise.events == at_once.events);
  CHECK(bytewise.retry_ms == 250);  // "soon" is not a number: ignored
  REQUIRE(at_once.events.size() == 2);
  CHECK(at_once.events[0] == SseEvent{"s-1", "", "line one\nline two"});
  CHECK(at_once.events[1] == SseEvent{std::nullopt, "other", "x"});
}

TEST_CASE("sse decoder: an id holding a NUL is ignored, as eventsource-parser ignores it") {
  SseDecoder decoder;
  using namespace std::string_literals;  // the literal holds NULs
  auto chunk = decoder.feed("id: kept\nid: a\0b\ndata: x\n\nid: c\0d\ndata: y\n\n"s);
  REQUIRE(chunk.events.size() == 2);
  CHECK(chunk.events[0].id == "kept");
  CHECK_FALSE(chunk.events[1].id.has_value());
}
