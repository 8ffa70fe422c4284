// What one tools/call costs the store, counted at the backend: how many batches it
// commits, and how many reads reach the store once the session is loaded.
//
// Streams and their events are kept out of the session's storage cache (written once per
// call, read back only by a resume or their expiry, they would fill it). A new stream's id
// is unique by construction (mcp/stream_ids.hpp), so opening it reads nothing: a call that
// finishes in its turn reads nothing from the store, and one that finishes later reads its
// stream's record once, when its result is appended. Nothing else, and never a listing.
//
// Why these are the minimums: everything a synchronous tool's call writes (the stream's
// record and priming event, the journal record, the result event, the journal record's
// removal, the stream's end) belongs to the POST's own turn, and a turn commits once; the
// output gate sends the response, priming event included, only after that commit. A tool
// that finishes later needs a second batch for what happens then (the result, its event
// and the journal record's removal, together), and nothing more.
#include <doctest/doctest.h>

#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

std::string echo_call(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})";
}

struct Used {
  std::uint64_t commits = 0, reads = 0, scans = 0, puts = 0, deletes = 0;
};

Used used_by(SessionFixture& f, const std::function<void()>& work) {
  auto before = f.faulty.counters();
  work();
  auto after = f.faulty.counters();
  return Used{after.commits - before.commits, after.reads - before.reads,
              after.scans - before.scans, after.puts - before.puts, after.deletes - before.deletes};
}

void start_session(SessionFixture& f, const std::string& s) {
  REQUIRE(f.initialize(s).status == 200);
  REQUIRE(f.post(s, R"({"jsonrpc":"2.0","method":"notifications/initialized"})").status == 202);
  // The first call also arms the session's alarms (idle, stream retention) for later.
  REQUIRE(f.post(s, echo_call(2)).status == 200);
}

}  // namespace

TEST_CASE(
    "a tools/call of echo commits one batch, and reads nothing from the store once the session is "
    "loaded") {
  SessionFixture f;
  const std::string s = "s-commits-echo-001";
  start_session(f, s);
  for (int id = 3; id < 13; ++id) {
    HttpResponse r;
    auto used = used_by(f, [&] { r = f.post(s, echo_call(id)); });
    REQUIRE(r.status == 200);
    auto ev = events(r);
    REQUIRE(ev.size() == 1);
    CHECK(text_of(ev[0]) == "hi");
    CHECK(event_id(r, 0));  // the priming event went out in the same response
    CHECK(used.commits == 1);
    CHECK(used.reads == 0);  // its storage cache answered every read
    CHECK(used.scans == 0);
    // The last activity, the stream's record and the result event. No journal record (the
    // call finished in its turn: its result commits with it) and so no tombstones; no
    // priming event key (the record counts it).
    CHECK(used.puts == 3);
    CHECK(used.deletes == 0);
  }
  f.expected_active = 1;
}

TEST_CASE("without the storage cache the same calls read the store every time") {
  SessionFixture f(false);
  f.options.storage_cache_bytes = 0;
  f.add_namespace();
  const std::string s = "s-commits-echo-002";
  start_session(f, s);
  for (int id = 3; id < 6; ++id) {
    auto used = used_by(f, [&] { REQUIRE(f.post(s, echo_call(id)).status == 200); });
    CHECK(used.commits == 1);
    CHECK(used.reads > 0);
  }
  f.expected_active = 1;
}

TEST_CASE("a tools/call that finishes later commits two batches: priming and journal first, the result after") {
  SessionFixture f;
  const std::string s = "s-commits-sleep-01";
  start_session(f, s);
  SessionCall c;
  c.kind = SessionCall::Kind::post;
  c.session_id = s;
  c.caller = f.alice;
  c.messages = messages(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":100}}})");
  auto answer = std::make_shared<std::optional<HttpResponse>>();
  auto started = used_by(f, [&] {
    f.send(std::move(c), answer);
    f.runtime->run_until_idle();
  });
  REQUIRE(answer->has_value());
  read(**answer);
  CHECK(event_id(**answer, 0));  // the priming event, sent after its batch committed
  CHECK(events(**answer).empty());
  CHECK(started.commits == 1);
  auto finished = used_by(f, [&] { f.run_until(f.clock.now_ms() + 100); });
  auto state = read(**answer);
  CHECK(state.over);
  CHECK_FALSE(state.aborted);
  auto ev = events(**answer);
  REQUIRE(ev.size() == 1);
  CHECK(text_of(ev[0]) == "slept 100 ms");
  CHECK(finished.commits == 1);
  CHECK(started.reads == 0);   // a new stream: nothing to read
  CHECK(finished.reads == 1);  // its record, to append the result
  // Running past its turn, the call is journaled: the last activity, the stream's record,
  // the journal record and its index entry; then the record again, the result, and the
  // journal record and index entry removed.
  CHECK(started.puts == 4);
  CHECK(started.deletes == 0);
  CHECK(finished.puts == 2);
  CHECK(finished.deletes == 2);
  CHECK(started.scans + finished.scans == 0);
  f.expected_active = 1;
}
