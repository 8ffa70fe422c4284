// InflightJournal and Reaper over an in-memory SessionStore: record encoding and its
// errors, the journal's record-plus-index pairs, and what the reaper does to each kind of
// record (dead by restart or by reset, current, standalone, answered, stream gone), with
// one commit per record; the restart_reap span. Atomicity across a crash is the
// session's (tests/actors).
#include "dorm/mcp/reaper.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "dorm/mcp/reap_telemetry.hpp"
#include "dorm/mcp/session_keys.hpp"
#include "map_store.hpp"

using namespace dorm;
using namespace dorm::mcp;
using dorm::testing::MapStore;

namespace {

// The runtime index as a set of request keys (the session object prefixes its own id).
class SetIndex : public InflightIndex {
 public:
  std::set<std::string> keys;
  Result<void> put(std::string_view request_key) override {
    keys.emplace(request_key);
    return {};
  }
  Result<void> del(std::string_view request_key) override {
    keys.erase(std::string(request_key));
    return {};
  }
};

struct Session {
  MapStore store;
  SetIndex index;
  EventLog log{store};
  InflightJournal journal{store, index};
  std::vector<std::string> commits;  // one entry per commit: the record's request key

  // Opens a POST stream for `first` (primed, as for a 2025-11-25 session).
  void open(std::uint64_t stream, const RequestId& first, std::int64_t retry_ms = 500) {
    REQUIRE(log.open(stream, first.to_key(), retry_ms).ok());
  }
  void record(std::uint64_t stream, const RequestId& id, Epoch epoch) {
    REQUIRE(journal.put(JournalRecord{id, stream, epoch}).ok());
  }
  ReapReport reap(Epoch current, std::int64_t now_ms = 1000) {
    Reaper reaper(journal, log);
    auto plan = reaper.find(current);
    REQUIRE(plan.ok());
    return reaper.run(*plan, current, now_ms, [this](const Reaper::Step& step) -> Result<void> {
      commits.push_back(step.record.request.to_key());
      return {};
    });
  }
  std::vector<rapidjson::Document> replay_all(std::uint64_t stream) {
    auto events = log.events(stream);
    REQUIRE(events.ok());
    std::vector<rapidjson::Document> out;
    for (const auto& e : *events) {
      if (e.data.empty()) continue;  // the priming event
      out.emplace_back();
      out.back().Parse(e.data.c_str());
      REQUIRE_FALSE(out.back().HasParseError());
    }
    return out;
  }
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Checks that `doc` is the reaper's error for `id`, and that its message never invites a retry.
void check_interrupted(const rapidjson::Document& doc, const RequestId& id, std::string_view reason,
                       std::uint64_t dead_generation) {
  REQUIRE(doc.IsObject());
  CHECK(std::string(doc["jsonrpc"].GetString()) == "2.0");
  if (id.is_integer()) {
    CHECK(doc["id"].GetInt64() == id.integer());
  } else {
    CHECK(std::string(doc["id"].GetString()) == id.string());
  }
  const auto& error = doc["error"];
  CHECK(error["code"].GetInt() == -32001);
  std::string message = error["message"].GetString();
  CHECK(message.find("outcome is unknown") != std::string::npos);
  CHECK(message.find("side effects may already have happened") != std::string::npos);
  CHECK(message.find("Check the current state before running it again") != std::string::npos);
  CHECK(lower(message).find("retry") == std::string::npos);
  CHECK(lower(message).find("try again") == std::string::npos);
  const auto& data = error["data"];
  CHECK(std::string(data["reason"].GetString()) == reason);
  CHECK(data["retrySafe"].IsFalse());
  CHECK(data["deadGeneration"].GetUint64() == dead_generation);
  CHECK(data.MemberCount() == 3);
}

}  // namespace

TEST_CASE(
    "journal record: round-trips; anything else is corruption naming the request and the fault") {
  JournalRecord r{RequestId(std::int64_t{42}), 0x00ab00cd00ef0012ULL, Epoch{7, 123}};
  CHECK(r.to_json() == R"({"stream":"00ab00cd00ef0012","generation":7,"activation":123})");
  auto back = JournalRecord::from_json(r.request, r.to_json());
  REQUIRE(back.ok());
  CHECK(back->request == r.request);
  CHECK(back->stream == r.stream);
  CHECK(back->epoch == r.epoch);
  CHECK(session_keys::journal(RequestId(std::string("a/b"))) == "j/s:a/b");

  struct Bad {
    const char* json;
    const char* says;
  };
  for (auto [json, says] : {
           Bad{"", "not a JSON object"},
           Bad{"[1]", "not a JSON object"},
           Bad{R"({"generation":1,"activation":1})", R"("stream" is not a string)"},
           Bad{R"({"stream":"00AB00CD00EF0012","generation":1,"activation":1})",
               "16 lowercase hex digits"},
           Bad{R"({"stream":"ab00cd00ef0012","generation":1,"activation":1})",
               "16 lowercase hex digits"},
           Bad{R"({"stream":"00ab00cd00ef0012","generation":-1,"activation":1})",
               R"("generation")"},
           Bad{R"({"stream":"00ab00cd00ef0012","generation":1})", R"("activation")"},
           Bad{R"({"stream":"00ab00cd00ef0012","generation":1,"activation":1.5})",
               R"("activation")"},
       }) {
    CAPTURE(json);
    auto parsed = JournalRecord::from_json(RequestId(std::string("req-1")), json);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().code == ErrorCode::corruption);
    CHECK(parsed.error().message.find(R"(request "req-1")") != std::string::npos);
    CHECK(parsed.error().message.find(says) != std::string::npos);
  }
}

TEST_CASE(
    "journal: a record and its index entry come and go together; unreadable records are listed "
    "apart and kept") {
  Session s;
  s.record(1, RequestId(std::int64_t{1}), Epoch{1, 1});
  s.record(2, RequestId(std::string("two")), Epoch{1, 2});
  CHECK(s.store.count("j/") == 2);
  CHECK(s.index.keys == std::set<std::string>{"i:1", "s:two"});
  CHECK(s.journal.contains(RequestId(std::int64_t{1})).value());
  CHECK(s.journal.contains(RequestId(std::string("two"))).value());
  CHECK_FALSE(s.journal.contains(RequestId(std::string("1"))).value());  // "1" is not 1
  REQUIRE(s.journal.del(RequestId(std::int64_t{1})).ok());
  CHECK(s.index.keys == std::set<std::string>{"s:two"});
  CHECK_FALSE(s.journal.contains(RequestId(std::int64_t{1})).value());
  REQUIRE(s.journal.del(RequestId(std::int64_t{1})).ok());  // not there: fine

  s.store.data["j/x:1"] = R"({"stream":"0000000000000001","generation":1,"activation":1})";
  s.store.data["j/i:3"] = "garbage";
  auto listing = s.journal.list();
  REQUIRE(listing.ok());
  REQUIRE(listing->records.size() == 1);
  CHECK(listing->records[0].request == RequestId(std::string("two")));
  CHECK(listing->records[0].stream == 2);
  REQUIRE(listing->unreadable.size() == 2);
  CHECK(listing->unreadable[0].first == "j/i:3");
  CHECK(listing->unreadable[0].second.message.find("malformed") != std::string::npos);
  CHECK(listing->unreadable[1].first == "j/x:1");
  CHECK(listing->unreadable[1].second.message.find("names no request id") != std::string::npos);
  CHECK(s.store.count("j/") == 3);
}

TEST_CASE(
    "reaper: a request killed by a restart gets the -32001 error on its stream, which then ends") {
  Session s;
  const RequestId id(std::int64_t{7});
  s.open(0x10, id);
  REQUIRE(s.log
              .append(0x10,
                      notification("notifications/progress", R"({"progressToken":1,"progress":1})"))
              .ok());
  s.record(0x10, id, Epoch{3, 40});

  auto report = s.reap(Epoch{4, 1}, 5000);
  CHECK_FALSE(report.failure);
  CHECK(report.requests == 1);
  CHECK(report.streams == 1);
  CHECK(report.server_restart == 1);
  CHECK(report.session_reset == 0);
  CHECK(report.reason() == "server_restart");
  CHECK(report.dead_generations == std::vector<std::uint64_t>{3});
  CHECK(report.dead_generation() == 3);
  CHECK(describe(report) ==
        "reaped 1 in-flight request(s) on 1 stream(s) left by generation 3 (server_restart)");
  CHECK(s.commits == std::vector<std::string>{"i:7"});

  // The error follows what was there; a resume from the priming event replays both, and
  // nothing follows the error in a finished stream.
  auto replay = s.log.replay_after(EventId{0x10, 0});
  REQUIRE(replay.ok());
  REQUIRE(replay->events.size() == 2);
  CHECK(replay->finished);
  CHECK(replay->events[1].id == EventId{0x10, 2});
  auto all = s.replay_all(0x10);
  check_interrupted(all[1], id, "server_restart", 3);
  auto stream = s.log.stream(0x10);
  REQUIRE(stream.ok());
  CHECK((*stream)->finished_ms == 5000);
  CHECK(s.store.count("j/") == 0);
  CHECK(s.index.keys.empty());

  // A second start finds nothing.
  auto again = s.reap(Epoch{5, 1});
  CHECK(again.handled() == 0);
  CHECK(s.commits.size() == 1);
  CHECK(s.replay_all(0x10).size() == 2);
}

TEST_CASE(
    "reaper: a batch's requests each get an error, in id order, and the stream ends with the "
    "last") {
  Session s;
  // A 2025-03-26 session: no priming event, so the stream may be empty.
  s.open(0x20, RequestId(std::int64_t{10}), 0);
  for (auto id :
       {RequestId(std::int64_t{10}), RequestId(std::int64_t{2}), RequestId(std::string("three"))}) {
    s.record(0x20, id, Epoch{1, 5});
  }
  std::vector<bool> finished;
  Reaper reaper(s.journal, s.log);
  auto plan = reaper.find(Epoch{2, 1});
  REQUIRE(plan.ok());
  auto report = reaper.run(*plan, Epoch{2, 1}, 0, [&](const Reaper::Step& step) -> Result<void> {
    CHECK(step.appended);
    finished.push_back(step.finished_stream);
    return {};
  });
  CHECK(report.requests == 3);
  CHECK(report.streams == 1);
  CHECK(finished == std::vector<bool>{false, false, true});
  auto all = s.replay_all(0x20);
  REQUIRE(all.size() == 3);
  check_interrupted(all[0], RequestId(std::int64_t{2}), "server_restart", 1);
  check_interrupted(all[1], RequestId(std::int64_t{10}), "server_restart", 1);
  check_interrupted(all[2], RequestId(std::string("three")), "server_restart", 1);
}

TEST_CASE(
    "reaper: several streams; current and newer epochs, standalone streams are never touched") {
  Session s;
  s.open(0x31, RequestId(std::int64_t{1}));
  s.open(0x32, RequestId(std::int64_t{2}));
  s.open(0x33, RequestId(std::int64_t{3}));
  s.open(0x34, RequestId(std::int64_t{4}));
  REQUIRE(s.log.open(0x35, "", 500).ok());  // standalone: answers no request
  s.record(0x31, RequestId(std::int64_t{1}), Epoch{8, 100});
  s.record(0x32, RequestId(std::int64_t{2}), Epoch{8, 100});
  s.record(0x33, RequestId(std::int64_t{3}), Epoch{9, 2});  // the current epoch: running
  s.record(0x34, RequestId(std::int64_t{4}), Epoch{9, 3});  // newer: not ours to judge
  s.record(0x35, RequestId(std::int64_t{5}), Epoch{8, 100});

  auto report = s.reap(Epoch{9, 2});
  CHECK(report.requests == 2);
  CHECK(report.streams == 2);
  CHECK(report.standalone == 1);
  CHECK(s.commits == std::vector<std::string>{"i:1", "i:2"});
  CHECK(s.replay_all(0x31).size() == 1);
  CHECK(s.replay_all(0x32).size() == 1);
  CHECK(s.replay_all(0x33).empty());
  CHECK(s.replay_all(0x34).empty());
  CHECK(s.replay_all(0x35).empty());
  CHECK_FALSE((*s.log.stream(0x33))->finished);
  CHECK_FALSE((*s.log.stream(0x35))->finished);
  CHECK(s.index.keys == std::set<std::string>{"i:3", "i:4", "i:5"});
}

TEST_CASE(
    "reaper: a reset in the same generation is session_reset; both reasons are reported together") {
  Session s;
  s.open(0x41, RequestId(std::int64_t{1}));
  s.open(0x42, RequestId(std::int64_t{2}));
  s.record(0x41, RequestId(std::int64_t{1}), Epoch{6, 10});
  s.record(0x42, RequestId(std::int64_t{2}), Epoch{5, 99});
  auto report = s.reap(Epoch{6, 11});
  check_interrupted(s.replay_all(0x41)[0], RequestId(std::int64_t{1}), "session_reset", 6);
  check_interrupted(s.replay_all(0x42)[0], RequestId(std::int64_t{2}), "server_restart", 5);
  CHECK(report.session_reset == 1);
  CHECK(report.server_restart == 1);
  CHECK(report.reason() == "server_restart,session_reset");
  CHECK(report.dead_generations == std::vector<std::uint64_t>{5, 6});
  CHECK(report.dead_generation() == 6);
  CHECK(describe(report) ==
        "reaped 2 in-flight request(s) on 2 stream(s) left by generations 5, 6 "
        "(server_restart,session_reset)");
  CHECK(reap_reason(Epoch{6, 10}, Epoch{6, 11}) == ReapReason::session_reset);
  CHECK(reap_reason(Epoch{5, 900}, Epoch{6, 1}) == ReapReason::server_restart);
}

TEST_CASE(
    "reaper: an answered request, a gone stream and an ended stream lose their records without an "
    "error") {
  Session s;
  const RequestId answered(std::string("done"));
  s.open(0x51, answered);
  REQUIRE(s.log.append(0x51, result_response(answered, "{}")).ok());
  s.record(0x51, answered, Epoch{1, 1});
  s.record(0x52, RequestId(std::int64_t{2}), Epoch{1, 1});  // its stream expired long ago
  s.open(0x53, RequestId(std::int64_t{3}));
  REQUIRE(s.log.finish(0x53, 10).ok());
  s.record(0x53, RequestId(std::int64_t{3}), Epoch{1, 1});

  auto report = s.reap(Epoch{2, 1});
  CHECK(report.requests == 0);
  CHECK(report.streams == 0);
  CHECK(report.answered == 1);
  CHECK(report.stream_gone == 2);
  CHECK(report.reason().empty());
  CHECK(report.dead_generations == std::vector<std::uint64_t>{1});
  CHECK(s.commits.size() == 3);
  CHECK(s.replay_all(0x51).size() == 1);
  CHECK(s.replay_all(0x53).empty());
  CHECK((*s.log.stream(0x51))->finished);  // its last record settled it
  CHECK(s.store.count("j/") == 0);
  CHECK(s.index.keys.empty());
  CHECK_FALSE(s.log.stream(0x52)->has_value());  // nothing made up for a gone stream
}

TEST_CASE(
    "reaper: a record whose stream record is corrupt is reported and left; the others are reaped") {
  Session s;
  s.store.data["l/" + stream_key(0x71)] = "{not json";
  s.record(0x71, RequestId(std::int64_t{1}), Epoch{1, 1});
  s.open(0x72, RequestId(std::int64_t{2}));
  s.record(0x72, RequestId(std::int64_t{2}), Epoch{1, 1});
  Reaper reaper(s.journal, s.log);
  auto plan = reaper.find(Epoch{2, 1});
  REQUIRE(plan.ok());
  REQUIRE(plan->unreadable.size() == 1);
  CHECK(plan->unreadable[0].first == "j/i:1");
  CHECK(plan->unreadable[0].second.code == ErrorCode::corruption);
  CHECK(plan->unreadable[0].second.message.find("stream record 0000000000000071 is malformed") !=
        std::string::npos);
  auto report = s.reap(Epoch{2, 1});
  CHECK(report.requests == 1);
  CHECK(s.index.keys == std::set<std::string>{"i:1"});
}

TEST_CASE(
    "reaper: a failed commit stops the reap; what was committed is reported, the rest is left for "
    "the next start") {
  Session s;
  s.open(0x61, RequestId(std::int64_t{1}));
  s.open(0x62, RequestId(std::int64_t{2}));
  s.record(0x61, RequestId(std::int64_t{1}), Epoch{1, 1});
  s.record(0x62, RequestId(std::int64_t{2}), Epoch{1, 1});
  Reaper reaper(s.journal, s.log);
  auto plan = reaper.find(Epoch{2, 1});
  REQUIRE(plan.ok());
  int commits = 0;
  auto report = reaper.run(*plan, Epoch{2, 1}, 0, [&](const Reaper::Step&) -> Result<void> {
    if (++commits == 2) return Error{ErrorCode::io_error, "disk on fire"};
    return {};
  });
  REQUIRE(report.failure);
  CHECK(report.failure->message == "disk on fire");
  CHECK(report.requests == 1);
  CHECK(report.streams == 1);
  CHECK(commits == 2);
}

TEST_CASE(
    "reap telemetry: ERROR with the count when requests were reaped, OK when records were only "
    "dropped, ReapFailed on a failure") {
  trace::RecordingTracer tracer;
  auto exception_of = [](const trace::SpanData& span) {
    std::map<std::string, std::string> out;
    for (const auto& e : span.events) {
      if (e.name != "exception") continue;
      for (const auto& a : e.attributes) out[a.key] += std::get<std::string>(a.value) + ";";
    }
    return out;
  };
  ReapReport reaped;
  reaped.requests = 2;
  reaped.streams = 1;
  reaped.server_restart = 2;
  reaped.dead_generations = {41};
  auto span = tracer.start_span(kRestartReapSpan);
  record_reap(span, reaped, "object-1", 42);
  ReapReport dropped;
  dropped.answered = 1;
  dropped.dead_generations = {41};
  span = tracer.start_span(kRestartReapSpan);
  record_reap(span, dropped, "object-2", 42);
  ReapReport failed = reaped;
  failed.failure = Error{ErrorCode::io_error, "disk on fire"};
  span = tracer.start_span(kRestartReapSpan);
  record_reap(span, failed, "object-3", 42);

  auto spans = tracer.spans_named(kRestartReapSpan);
  REQUIRE(spans.size() == 3);
  CHECK(spans[0].status == trace::SpanStatus::error);
  auto first = exception_of(spans[0]);
  CHECK(first["exception.type"] == "dorm.ServerRestart;");
  CHECK(first["exception.message"] ==
        "reaped 2 in-flight request(s) on 1 stream(s) left by generation 41 (server_restart);");
  CHECK(std::get<std::string>(*spans[0].attribute(reap_attr::kSession)) == "object-1");
  CHECK(std::get<std::int64_t>(*spans[0].attribute(reap_attr::kRequests)) == 2);
  CHECK(std::get<std::int64_t>(*spans[0].attribute(reap_attr::kStreams)) == 1);
  CHECK(std::get<std::int64_t>(*spans[0].attribute(reap_attr::kDeadGeneration)) == 41);
  CHECK(std::get<std::string>(*spans[0].attribute(reap_attr::kReason)) == "server_restart");
  CHECK(std::get<std::int64_t>(*spans[0].attribute(reap_attr::kDropped)) == 0);

  CHECK(spans[1].status == trace::SpanStatus::ok);
  CHECK(spans[1].events.empty());
  CHECK(std::get<std::int64_t>(*spans[1].attribute(reap_attr::kDropped)) == 1);

  CHECK(spans[2].status == trace::SpanStatus::error);
  CHECK(exception_of(spans[2])["exception.type"] == "dorm.ServerRestart;dorm.ReapFailed;");
  CHECK(spans[2].status_message == "io_error: disk on fire");
}
