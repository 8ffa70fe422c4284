// Reading a stored session from outside it: journal records and index entries as the
// session writes them, and read_session() over a backend key range (what dorm inspect shows).
#include "dorm/mcp/session_snapshot.hpp"

#include <doctest/doctest.h>

#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/session_keys.hpp"
#include "dorm/storage/memory_backend.hpp"

using namespace dorm;
using namespace dorm::mcp;

namespace {

// Writes straight into a backend under a prefix, one commit per put: how the test lays out
// a session's keys (the session object writes them through its turn's batch).
class WritableStore : public SessionStore {
 public:
  WritableStore(storage::Backend& backend, std::string prefix)
      : backend_(backend), prefix_(std::move(prefix)), reader_(backend, prefix_) {}
  Result<std::optional<std::string>> get(std::string_view key) override { return reader_.get(key); }
  Result<void> put(std::string_view key, std::string_view value) override {
    storage::WriteBatch b;
    b.put(prefix_ + std::string(key), value);
    return backend_.commit(b);
  }
  Result<bool> del(std::string_view key) override {
    storage::WriteBatch b;
    b.del(prefix_ + std::string(key));
    if (auto ok = backend_.commit(b); !ok) return std::move(ok).error();
    return true;
  }
  Result<std::vector<storage::KeyValue>> list(std::string_view prefix, std::string_view start,
                                              std::size_t limit) override {
    return reader_.list(prefix, start, limit);
  }

 private:
  storage::Backend& backend_;
  std::string prefix_;
  ReadOnlySessionStore reader_;
};

const std::string kObjectId(64, 'a');

}  // namespace

TEST_CASE("in-flight index entries: <session object id>/<request key>, split back") {
  std::string key = RequestId(std::string("a/b")).to_key();
  std::string entry = inflight_entry(kObjectId, key);
  CHECK(entry == kObjectId + "/s:a/b");
  auto parts = parse_inflight_entry(entry);
  REQUIRE(parts);
  CHECK(parts->session_object_id == kObjectId);
  CHECK(parts->request_key == "s:a/b");
  CHECK(RequestId::from_key(parts->request_key) == RequestId(std::string("a/b")));
  for (std::string bad : {std::string(), kObjectId, kObjectId + "/", std::string(63, 'a') + "/i:1",
                          std::string(64, 'A') + "/i:1", kObjectId + "xi:1"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_inflight_entry(bad));
  }
}

TEST_CASE("read_session: metadata, streams with their decoded events, and journal records") {
  storage::MemoryBackend backend;
  const std::string prefix = "session-1/";
  WritableStore writer(backend, prefix);
  // Another object's keys just past this one's: never read as this session's.
  WritableStore neighbour(backend, "session-1\xff");
  REQUIRE(neighbour.put("meta", "not this one").ok());
  REQUIRE(neighbour.put("j/i:9", "{}").ok());

  SessionMeta meta;
  meta.protocol_version = "2025-11-25";
  meta.client_info = R"({"name":"raw-test","version":"1"})";
  meta.created_ms = 1'700'000'000'000;
  meta.initialized = true;
  REQUIRE(writer.put(session_keys::kMeta, meta.to_json()).ok());
  EventLog log(writer);
  REQUIRE(log.open(0x1111, "i:1", 500).ok());
  const std::string result =
      R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}})";
  REQUIRE(log.append(0x1111, result).ok());
  REQUIRE(log.finish(0x1111, 1'700'000'000'500).ok());
  REQUIRE(log.open(0x2222, "i:2", 500).ok());
  for (int i = 0; i < 5; ++i) REQUIRE(log.append(0x2222, R"({"jsonrpc":"2.0","method":"n"})").ok());
  REQUIRE(
      writer.put(std::string(session_keys::kJournal) + "i:2", JournalRecord{RequestId(std::int64_t{2}), 0x2222, Epoch{1, 7}}.to_json()).ok());

  ReadOnlySessionStore reader(backend, prefix);
  SnapshotOptions options;
  options.max_events = 3;
  auto snap = read_session(reader, options);
  REQUIRE(snap.ok());
  CHECK(snap->problems.empty());
  REQUIRE(snap->meta);
  CHECK(snap->meta->protocol_version == "2025-11-25");
  CHECK(snap->meta->client_info == meta.client_info);
  REQUIRE(snap->streams.size() == 2);
  const auto& done = snap->streams[0];
  CHECK(done.record.id == 0x1111);
  CHECK(done.record.request == "i:1");
  CHECK(done.record.finished);
  REQUIRE(done.events.size() == 2);
  CHECK(done.events[0].data.empty());  // priming
  CHECK(done.events[1].data == result);
  CHECK(done.omitted == 0);
  const auto& running = snap->streams[1];
  CHECK_FALSE(running.record.finished);
  REQUIRE(running.events.size() == 3);  // the newest three of six
  CHECK(running.omitted == 3);
  CHECK(running.events[0].id.seq == 3);
  REQUIRE(snap->journal.size() == 1);
  CHECK(snap->journal[0].request_key == "i:2");
  CHECK(snap->journal[0].record.stream == 0x2222);
  CHECK(snap->journal[0].record.epoch == Epoch{1, 7});

  // Reading wrote nothing, and cannot.
  CHECK(reader.put("meta", "x").error().code == ErrorCode::read_only);
  CHECK(reader.del("meta").error().code == ErrorCode::read_only);
  CHECK(*reader.get("meta") == meta.to_json());
}

TEST_CASE("read_session: a record that does not decode is reported, and the rest is still read") {
  storage::MemoryBackend backend;
  WritableStore writer(backend, "s/");
  REQUIRE(writer.put(session_keys::kMeta, "{broken").ok());
  REQUIRE(writer.put(std::string(session_keys::kJournal) + "i:1", "nonsense").ok());
  REQUIRE(writer.put(std::string(session_keys::kJournal) + "i:2", JournalRecord{RequestId(std::int64_t{2}), 5, Epoch{1, 2}}.to_json()).ok());
  EventLog log(writer);
  REQUIRE(log.open(5, "i:2", 0).ok());
  ReadOnlySessionStore reader(backend, "s/");
  auto snap = read_session(reader);
  REQUIRE(snap.ok());
  CHECK_FALSE(snap->meta);
  REQUIRE(snap->problems.size() == 2);
  CHECK(snap->problems[0].find("session metadata is malformed") != std::string::npos);
  CHECK(snap->problems[1].find("journal record i:1") != std::string::npos);
  REQUIRE(snap->journal.size() == 1);
  CHECK(snap->journal[0].request_key == "i:2");
  REQUIRE(snap->streams.size() == 1);
  CHECK(snap->streams[0].events.empty());

  // An empty session: nothing, and no problem.
  ReadOnlySessionStore nobody(backend, "t/");
  auto empty = read_session(nobody);
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->meta);
  CHECK(empty->streams.empty());
  CHECK(empty->journal.empty());
  CHECK(empty->problems.empty());
}
