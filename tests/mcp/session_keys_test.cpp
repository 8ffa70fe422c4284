// The session's key layout: every key built by session_keys parses back to what built it,
// families do not overlap, and the fixed-width parts keep numeric order in byte order.

#include "dorm/mcp/session_keys.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

using namespace dorm::mcp;
namespace keys = dorm::mcp::session_keys;

TEST_CASE("stream records and event chunks parse back to their stream and seq") {
  for (std::uint64_t stream : {std::uint64_t{0}, std::uint64_t{0x1234abcd}, ~std::uint64_t{0}}) {
    CHECK(keys::parse_stream_record(keys::stream_record(stream)) == stream);
    for (std::uint64_t seq : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{1} << 40}) {
      const auto chunk = keys::event_chunk(stream, seq, 3);
      CHECK(chunk.starts_with(keys::event(stream, seq)));
      CHECK(chunk.starts_with(keys::stream_events(stream)));
      CHECK(keys::parse_event_seq(stream, chunk) == seq);
      // A chunk of one stream is not an event of another.
      CHECK_FALSE(keys::parse_event_seq(stream + 1, chunk));
    }
  }
  CHECK(keys::stream_record(0xab) == "l/00000000000000ab");
  CHECK(keys::event_chunk(0xab, 2, 1) == "e/00000000000000ab/0000000000000002/0001");
}

TEST_CASE("malformed stream and event keys do not parse") {
  CHECK_FALSE(keys::parse_stream_record("l/"));
  CHECK_FALSE(keys::parse_stream_record("l/00ab"));
  CHECK_FALSE(keys::parse_stream_record("l/00000000000000AB"));
  CHECK_FALSE(keys::parse_stream_record("e/00000000000000ab"));
  CHECK_FALSE(keys::parse_event_seq(0xab, "e/00000000000000ab/"));
  CHECK_FALSE(keys::parse_event_seq(0xab, "e/00000000000000ab/000000000000000g/0000"));
  CHECK_FALSE(keys::parse_event_seq(0xab, "e/00000000000000ab/00000000000000020000"));
}

TEST_CASE("events sort by seq and chunk under byte order") {
  std::vector<std::string> built;
  for (std::uint64_t seq : {std::uint64_t{255}, std::uint64_t{2}, std::uint64_t{16}}) {
    for (std::uint32_t chunk : {10u, 1u}) built.push_back(keys::event_chunk(5, seq, chunk));
  }
  std::sort(built.begin(), built.end());
  std::vector<std::pair<std::uint64_t, std::string>> seqs;
  for (const auto& k : built) seqs.emplace_back(*keys::parse_event_seq(5, k), k.substr(k.rfind('/') + 1));
  CHECK(std::is_sorted(seqs.begin(), seqs.end()));
  CHECK(seqs.front().first == 2);
  CHECK(seqs.back().first == 255);
  // The start key of a replay range sorts before every chunk of that event.
  CHECK(keys::event(5, 16) < keys::event_chunk(5, 16, 0));
}

TEST_CASE("journal keys carry the request key and parse back to the request") {
  for (const RequestId& id : {RequestId(std::int64_t{42}), RequestId(std::string("a/b")), RequestId(std::string(""))}) {
    auto key = keys::journal(id);
    auto request_key = keys::journal_request_key(key);
    REQUIRE(request_key);
    CHECK(RequestId::from_key(*request_key) == id);
  }
  CHECK_FALSE(keys::journal_request_key("j/"));
  CHECK_FALSE(keys::journal_request_key("s/x"));
}

TEST_CASE("subscriptions, storage and code-mode keys round-trip") {
  CHECK(keys::parse_subscription(keys::subscription("file:///a/b?c")) == "file:///a/b?c");
  CHECK(keys::parse_code_data(keys::code_data("counter/1")) == "counter/1");
  CHECK(keys::parse_settled(keys::settled("ex1")) == "ex1");
  CHECK(keys::parse_approval_alarm(keys::approval_alarm("ex1")) == "ex1");
  CHECK_FALSE(keys::parse_approval_alarm(keys::kIdleAlarm));
  CHECK_FALSE(keys::parse_approval_alarm(keys::kRetentionAlarm));
  CHECK(keys::tool_data("k") == "t/k");
  CHECK(keys::execution("ex1") == "x/r/ex1");
  CHECK(keys::approval_answer("ex1") == "approval-response:ex1");
  // Journal chunks sort by number: the sixth digit keeps 10 after 9.
  CHECK(keys::execution_journal_chunk("ex1", 9) < keys::execution_journal_chunk("ex1", 10));
  CHECK(keys::execution_journal_chunk("ex1", 3) == "x/j/ex1/000003");
}

TEST_CASE("no key of one family falls under another family's prefix") {
  const std::vector<std::string> built = {
      std::string(keys::kMeta), std::string(keys::kLastActivity), std::string(keys::kStandaloneCursor),
      keys::stream_record(1), keys::event_chunk(1, 1, 0), keys::journal(RequestId(std::int64_t{1})),
      keys::subscription("u"), keys::tool_data("k"), keys::code_data("k"), keys::execution("e"),
      keys::execution_journal_chunk("e", 0), keys::settled("e"), keys::approval_answer("e")};
  const std::vector<std::string_view> families = {
      keys::kStreams, keys::kEvents, keys::kJournal, keys::kSubscriptions, keys::kToolData, keys::kCodeData,
      keys::kExecutions, keys::kExecutionJournals, keys::kSettled, keys::kApprovalAnswers};
  for (const auto& key : built) {
    int owners = 0;
    for (auto prefix : families) owners += key.starts_with(prefix) ? 1 : 0;
    const bool fixed = key == keys::kMeta || key == keys::kLastActivity || key == keys::kStandaloneCursor;
    CHECK_MESSAGE(owners == (fixed ? 0 : 1), key);
  }
  std::set<std::string> distinct(built.begin(), built.end());
  CHECK(distinct.size() == built.size());
}
