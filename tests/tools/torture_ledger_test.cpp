// dorm torture's ledger check: what a session reads back after a restart against what its
// client saw of each append (tools/dorm/torture/ledger_check.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ledger_check.hpp"
#include "torture.hpp"

using dorm::torture::AppendOutcome;
using dorm::torture::LedgerCheck;
using dorm::torture::LedgerFinding;
using dorm::torture::SessionLedger;
using Tokens = std::vector<std::string>;

namespace {
std::vector<std::string> described(const LedgerCheck& check) {
  std::vector<std::string> out;
  for (const auto& f : check.findings)
    out.push_back(std::string(to_string(f.kind)) + " " + f.token + " x" + std::to_string(f.count));
  return out;
}
}  // namespace

TEST_CASE("torture ledger: every acknowledged token once, in any order, is clean") {
  SessionLedger ledger;
  ledger.record("a", AppendOutcome::acknowledged);
  ledger.record("b", AppendOutcome::acknowledged);
  auto check = ledger.check(Tokens{"b", "a"});
  CHECK(check.clean());
  CHECK(check.lost + check.duplicated + check.reappeared + check.foreign == 0);
  CHECK(ledger.check(Tokens{"a", "b"}).clean());
}

TEST_CASE(
    "torture ledger: an acknowledged token missing is lost; twice is duplicated; each reported "
    "once") {
  SessionLedger ledger;
  ledger.record("a", AppendOutcome::acknowledged);
  ledger.record("b", AppendOutcome::acknowledged);
  ledger.record("c", AppendOutcome::acknowledged);
  auto check = ledger.check(Tokens{"b", "c", "b"});
  CHECK(check.lost == 1);
  CHECK(check.duplicated == 1);
  CHECK(described(check) == std::vector<std::string>{"lost a x0", "duplicated b x2"});
  // The same state read again: already reported, not counted again.
  CHECK(ledger.check(Tokens{"b", "c", "b"}).clean());
  // c is still checked: losing it later is a new finding.
  CHECK(described(ledger.check(Tokens{"b", "b"})) == std::vector<std::string>{"lost c x0"});
}

TEST_CASE(
    "torture ledger: an unacknowledged token may be there once or not at all, but never twice") {
  for (auto outcome : {AppendOutcome::refused, AppendOutcome::unanswered}) {
    SessionLedger ledger;
    ledger.record("present", outcome);
    ledger.record("absent", outcome);
    ledger.record("twice", outcome);
    auto check = ledger.check(Tokens{"present", "twice", "twice"});
    CHECK(check.lost == 0);
    CHECK(check.duplicated == 1);
    CHECK(check.settled_stored == 1);
    CHECK(check.settled_absent == 1);
    CHECK(check.settled_stored_refused == (outcome == AppendOutcome::refused ? 1 : 0));
    CHECK(described(check) == std::vector<std::string>{"duplicated twice x2"});
  }
}

TEST_CASE("torture ledger: what the first check saw of an unacknowledged token must stay so") {
  SessionLedger ledger;
  ledger.record("seen", AppendOutcome::refused);
  ledger.record("unseen", AppendOutcome::unanswered);
  auto first = ledger.check(Tokens{"seen"});
  REQUIRE(first.clean());
  CHECK(first.settled_stored == 1);
  CHECK(first.settled_absent == 1);
  // Seen once, it is durable: gone later is lost. Not seen, it must not turn up later.
  auto check = ledger.check(Tokens{"unseen"});
  CHECK(check.lost == 1);
  CHECK(check.reappeared == 1);
  CHECK(described(check) == std::vector<std::string>{"lost seen x0", "reappeared unseen x1"});
  CHECK(check.settled_stored + check.settled_absent == 0);  // settled once, by the first
}

TEST_CASE("torture ledger: a token this session never appended is foreign, reported once") {
  SessionLedger ledger;
  ledger.record("mine", AppendOutcome::acknowledged);
  auto check = ledger.check(Tokens{"mine", "theirs", "theirs"});
  CHECK(check.foreign == 1);
  CHECK(described(check) == std::vector<std::string>{"foreign theirs x2"});
  CHECK(ledger.check(Tokens{"mine", "theirs", "theirs"}).clean());
}

TEST_CASE("torture ledger: recording a token again keeps what was recorded first") {
  SessionLedger ledger;
  ledger.record("a", AppendOutcome::acknowledged);
  ledger.record("a", AppendOutcome::unanswered);
  CHECK(ledger.size() == 1);
  CHECK(ledger.check(Tokens{}).lost == 1);
}

TEST_CASE(
    "torture --storage: {dir} is filled in; a template without it, a bad URI (memory: too) is "
    "refused") {
  using dorm::torture::storage_uri_for;
  auto rocks = storage_uri_for("rocksdb:{dir}/store", "/tmp/x");
  REQUIRE(rocks.ok());
  CHECK(*rocks == "rocksdb:/tmp/x/store");
  auto sqlite = storage_uri_for("sqlite:{dir}/store.db?durability=fsync", "/tmp/x");
  REQUIRE(sqlite.ok());
  CHECK(*sqlite == "sqlite:/tmp/x/store.db?durability=fsync");
  for (const char* bad :
       {"rocksdb:/var/lib/dorm", "nosuch:{dir}/s", "memory:{dir}", "rocksdb:{dir}/s?colour=blue"}) {
    auto refused = storage_uri_for(bad, "/tmp/x");
    CHECK_FALSE(refused.ok());
    if (!refused.ok()) CHECK(refused.error().message.find("--storage") == 0);
  }
}
