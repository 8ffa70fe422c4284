// Kill points: the process dies at every point of every commit of a workload.
//
// A workload of turns (appends that write an entry, a counter, an index entry and an
// alarm in one batch; the alarms' own turns) runs over RocksDB and SQLite, each in both
// durability modes. For each commit k of that workload and each point of it, a run dies
// there: before the batch reaches the store, or after the store applied it durably but
// before the runtime heard so (a lost acknowledgement). The dead process does nothing
// more; a new runtime starts over the reopened store. Each run checks the output gate
// (every reply a client received is durable; the dying turn released nothing) and the
// atomicity of a turn (entry, counter, index entry and alarm are all there or none is).
//
// Inside RocksDB a batch is one `Write` (its WAL record and memtable insert happen under
// RocksDB's own recovery), inside SQLite one transaction, and the runtime's index and alarm
// entries travel in the same batch as the object's keys: so the two points here are every
// point at which dorm can observe a commit. Kills between a WAL write and its memtable
// insert are real-process kills, in tests/storage/crash_test.cpp.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/open.hpp"
#include "numbered.hpp"
#include "runtime_fixture.hpp"
#include "temp_dir.hpp"

using namespace dorm;
using dorm::testing::must;
using dorm::testing::Reply;

namespace {

using append_atom = caf::atom_constant<caf::atom("append")>;
using dump_atom = caf::atom_constant<caf::atom("dump")>;

constexpr std::int64_t kAlarmDelayMs = 1000;

enum class Point { before_write, after_write };

std::string to_string(Point p) { return p == Point::before_write ? "before_write" : "after_write"; }

// Forwards every call until the armed commit. At it the process dies: the batch is dropped
// (before_write) or applied (after_write), and either way its caller hears a failure; from
// then on every call fails, as nothing runs in a dead process.
class KillPoint final : public storage::BackendWrapper {
 public:
  explicit KillPoint(storage::Backend& target) : storage::BackendWrapper(target) {}

  // The `kill_at`-th commit from now (1 = the next) dies at `point`; 0 = none.
  void arm(std::uint64_t kill_at, Point point) {
    commits_ = 0;
    kill_at_ = kill_at;
    point_ = point;
  }

  Result<void> commit(const storage::WriteBatch& batch) override {
    if (dead_) return dead();
    if (++commits_ == kill_at_) {
      dead_ = true;
      if (point_ == Point::after_write) {
        auto applied = storage::BackendWrapper::commit(batch);
        if (!applied) applied_error_ = applied.error().describe();
      }
      return dead();
    }
    return storage::BackendWrapper::commit(batch);
  }
  Result<std::optional<std::string>> get(std::string_view key) override {
    if (dead_) return dead();
    return storage::BackendWrapper::get(key);
  }
  Result<std::vector<std::optional<std::string>>> get_many(
      std::span<const std::string> keys) override {
    if (dead_) return dead();
    return storage::BackendWrapper::get_many(keys);
  }
  Result<std::vector<storage::KeyValue>> scan(const storage::ScanOptions& options) override {
    if (dead_) return dead();
    return storage::BackendWrapper::scan(options);
  }

  bool is_dead() const { return dead_; }
  std::uint64_t commits() const { return commits_; }
  // Set when an after_write kill's own write failed: the run then proves nothing.
  const std::string& applied_error() const { return applied_error_; }

 private:
  static Error dead() { return Error{ErrorCode::io_error, "the process died here"}; }

  std::uint64_t kill_at_ = 0;  // 1-based commit number; 0 = never
  Point point_ = Point::before_write;
  std::uint64_t commits_ = 0;
  bool dead_ = false;
  std::string applied_error_;
};

// Runs the earliest CAF timer if it fires by `until`; false when none does.
bool run_next_timer_before(Runtime& runtime, std::int64_t until) {
  auto at = runtime.next_timer_ms();
  if (!at || *at > until) return false;
  return runtime.run_until_next_timer();
}

// "entry/007": keys that list in the order of the entries.
std::string entry_key(int n) {
  auto digits = std::to_string(n);
  return "entry/" + std::string(digits.size() < 3 ? 3 - digits.size() : 0, '0') + digits;
}

// An append-only ledger. Each append is one turn that writes the entry, the entry count,
// an index entry and the alarm; the alarm's turn counts its firings.
class Ledger : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {
        [this](append_atom, const std::string& token) -> int {
          auto n = count() + 1;
          must(put(entry_key(n), token).ok(), "put entry");
          must(put("n", std::to_string(n)).ok(), "put n");
          must(index_put("ledgers", id().to_string(), std::to_string(n)).ok(), "index_put");
          must(set_alarm(clock().now_ms() + kAlarmDelayMs).ok(), "set_alarm");
          return n;
        },
        // "n|fired|index|alarm|token1,token2,…" with the entries in order.
        [this](dump_atom) -> std::string {
          ListOptions all_entries;
          all_entries.prefix = "entry/";
          auto entries = list(all_entries);
          must(entries.ok(), "list");
          std::string tokens;
          for (const auto& kv : *entries) tokens += kv.value + ",";
          auto fired = get("fired");
          auto alarm = get_alarm();
          must(fired.ok() && alarm.ok(), "get");
          return std::to_string(count()) + "|" + (*fired ? **fired : "0") + "|" +
                 std::to_string(entries->size()) + "|" + (*alarm ? "armed" : "none") + "|" +
                 tokens;
        },
    };
  }

  void on_alarm(const AlarmInfo&) override {
    auto fired = get("fired");
    must(fired.ok(), "get fired");
    must(put("fired", std::to_string((*fired ? std::stoi(**fired) : 0) + 1)).ok(), "put");
  }

 private:
  int count() {
    auto n = get("n");
    must(n.ok(), "get n");
    return *n ? std::stoi(**n) : 0;
  }
};

struct Store {
  std::string name;
  std::string (*uri)(const dorm::testing::TempDir&, const std::string& durability);
};

const Store kStores[] = {
    {"rocksdb",
     [](const dorm::testing::TempDir& dir, const std::string& d) {
       return "rocksdb:" + (dir / "db") + "?durability=" + d;
     }},
    {"sqlite",
     [](const dorm::testing::TempDir& dir, const std::string& d) {
       return "sqlite:" + (dir / "store.db") + "?durability=" + d;
     }},
};

const char* const kObjects[] = {"a", "b", "c"};
constexpr int kAppends = 9;

struct Outcome {
  std::uint64_t commits = 0;                  // commits the workload made before it died
  bool died = false;
  std::map<std::string, std::string> acked;   // token -> object, for every reply received
  std::optional<std::string> dying_token;     // the append whose commit was killed
};

// One process lifetime: starts a runtime over `uri`, runs the workload (appends round the
// objects, then the clock past their alarms) until it ends or the process dies at commit
// `kill_at`, then crashes the runtime and closes the store.
Outcome run_workload(const std::string& uri, VirtualClock& clock, std::uint64_t kill_at,
                     Point point) {
  auto store = storage::open_backend(uri);
  REQUIRE_MESSAGE(store.ok(), (store.ok() ? "" : store.error().describe()));
  KillPoint kp(**store);
  RuntimeOptions options;
  options.virtual_clock = &clock;
  auto rt = Runtime::start(kp, options);
  REQUIRE(rt.ok());
  auto& runtime = **rt;
  REQUIRE(runtime.register_namespace("ledger", [] { return std::make_unique<Ledger>(); }).ok());
  kp.arm(kill_at, point);  // the runtime's start-up commits are not counted

  Outcome out;
  for (int i = 0; i < kAppends && !kp.is_dead(); ++i) {
    std::string object = kObjects[i % 3];
    std::string token = dorm::testing::numbered("t", i);
    auto handle = runtime.get(runtime.id_from_name("ledger", object));
    REQUIRE(handle.ok());
    auto before = kp.commits();
    Reply reply;
    runtime.request(*handle, reply.handler(), append_atom::value, token);
    runtime.run_until_idle();
    if (reply.ok()) out.acked[token] = object;
    if (kp.is_dead() && kp.commits() == kill_at && before < kill_at) out.dying_token = token;
  }
  // The alarms' turns.
  auto until = clock.now_ms() + 2 * kAlarmDelayMs;
  while (!kp.is_dead() && run_next_timer_before(runtime, until)) {
  }
  CHECK_MESSAGE(kp.applied_error().empty(), kp.applied_error());
  out.commits = kp.commits();
  out.died = kp.is_dead();
  runtime.crash();
  return out;
}

struct Seen {
  int n = 0;
  int fired = 0;
  int entries = 0;
  bool alarm_armed = false;
  std::vector<std::string> tokens;
};

Seen parse_dump(const std::string& text) {
  Seen s;
  std::vector<std::string> fields;
  std::string::size_type start = 0;
  for (int i = 0; i < 4; ++i) {
    auto bar = text.find('|', start);
    REQUIRE(bar != std::string::npos);
    fields.push_back(text.substr(start, bar - start));
    start = bar + 1;
  }
  s.n = std::stoi(fields[0]);
  s.fired = std::stoi(fields[1]);
  s.entries = std::stoi(fields[2]);
  s.alarm_armed = fields[3] == "armed";
  for (auto comma = text.find(',', start); comma != std::string::npos;
       start = comma + 1, comma = text.find(',', start)) {
    s.tokens.push_back(text.substr(start, comma - start));
  }
  return s;
}

// The next process: a runtime over the reopened store lets the alarms come due, then each
// object describes itself; one more append per object shows it goes on from what is stored.
std::map<std::string, Seen> restart_and_read(const std::string& uri, VirtualClock& clock) {
  auto store = storage::open_backend(uri);
  REQUIRE_MESSAGE(store.ok(), (store.ok() ? "" : store.error().describe()));
  RuntimeOptions options;
  options.virtual_clock = &clock;
  auto rt = Runtime::start(**store, options);
  REQUIRE(rt.ok());
  auto& runtime = **rt;
  REQUIRE(runtime.register_namespace("ledger", [] { return std::make_unique<Ledger>(); }).ok());
  CHECK(runtime.start_kind() == StartReason::after_crash);
  runtime.run_until_idle();
  auto until = clock.now_ms() + 2 * kAlarmDelayMs;
  while (run_next_timer_before(runtime, until)) {
  }

  std::map<std::string, Seen> seen;
  for (const char* object : kObjects) {
    auto handle = runtime.get(runtime.id_from_name("ledger", object));
    REQUIRE(handle.ok());
    Reply dump;
    runtime.request(*handle, dump.handler(), dump_atom::value);
    runtime.run_until_idle();
    REQUIRE(dump.ok());
    seen[object] = parse_dump(dump.value->get_as<std::string>(0));
    Reply more;
    runtime.request(*handle, more.handler(), append_atom::value, std::string("after"));
    runtime.run_until_idle();
    CHECK(more.as_int() == seen[object].n + 1);
  }
  runtime.crash();
  return seen;
}

}  // namespace

TEST_CASE("kill points: a death at every point of every commit releases nothing undurable and "
          "splits no turn, on RocksDB and SQLite in both durability modes") {
  int runs = 0;
  for (const auto& store : kStores) {
    for (std::string durability : {"process", "fsync"}) {
      // A run that does not die counts the workload's commits.
      std::uint64_t total = 0;
      {
        dorm::testing::TempDir dir;
        VirtualClock clock;
        auto clean = run_workload(store.uri(dir, durability), clock, 0, Point::before_write);
        REQUIRE_FALSE(clean.died);
        REQUIRE(clean.acked.size() == kAppends);
        total = clean.commits;
        REQUIRE(total >= kAppends + 3);  // every append, and at least one alarm per object
      }
      for (std::uint64_t k = 1; k <= total; ++k) {
        for (Point point : {Point::before_write, Point::after_write}) {
          CAPTURE(store.name);
          CAPTURE(durability);
          CAPTURE(k);
          CAPTURE(to_string(point));
          dorm::testing::TempDir dir;
          VirtualClock clock;
          auto uri = store.uri(dir, durability);
          auto out = run_workload(uri, clock, k, point);
          REQUIRE(out.died);
          auto seen = restart_and_read(uri, clock);
          ++runs;

          std::set<std::string> present;
          for (const auto& [object, s] : seen) {
            CAPTURE(object);
            // A turn is whole: the counter, the entries and the index entry agree.
            CHECK(s.n == s.entries);
            CHECK(s.tokens.size() == static_cast<std::size_t>(s.n));
            // The alarm written with the last append came due after the restart: its index
            // entry was committed with the append (or nothing of the append was).
            if (s.n > 0) CHECK(s.fired >= 1);
            CHECK_FALSE(s.alarm_armed);
            for (const auto& t : s.tokens) CHECK(present.insert(t).second);  // at most once
          }
          // The output gate: every reply received names a durable entry.
          for (const auto& [token, object] : out.acked) {
            CAPTURE(token);
            CHECK(present.count(token) == 1);
          }
          // Nothing else is there, except the dying append when its batch reached the store.
          for (const auto& token : present) {
            if (out.acked.count(token)) continue;
            CAPTURE(token);
            CHECK(point == Point::after_write);
            CHECK(out.dying_token == token);
          }
          if (out.dying_token) {
            CHECK(out.acked.count(*out.dying_token) == 0);  // the dying turn released nothing
            CHECK(present.count(*out.dying_token) == (point == Point::after_write ? 1u : 0u));
          }
        }
      }
    }
  }
  MESSAGE("kill-point runs: " << runs);
}
