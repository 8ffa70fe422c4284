// The client-side ledger of one session under `dorm torture`, and the check of what the
// session's `ledger_read` gives back after a restart against it.
//
// Each append carries a token used nowhere else. What the client saw of the append says
// what the store may hold:
//
//   acknowledged (a result came)         exactly once, at every later check
//   refused (an error came, -32001 too)  at most once; unknown whether the work ran
//   unanswered (no response, or hung)    at most once, as refused
//
// An unacknowledged token is settled by the first check after its call ended: seen once,
// it must stay (it is durable now: later checks expect it exactly once); not seen, it must
// never appear (nothing runs a call again once its client has its outcome). A token read
// back that this session never appended is foreign. Each token is reported once, at the
// first check that finds it wrong.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dorm::torture {

enum class AppendOutcome { acknowledged, refused, unanswered };

struct LedgerFinding {
  enum class Kind {
    lost,        // expected exactly once, read back 0 times
    duplicated,  // read back more than once
    reappeared,  // an unacknowledged token absent at an earlier check, present now
    foreign,     // never appended to this session
  };
  Kind kind = Kind::lost;
  std::string token;
  std::size_t count = 0;  // how often it was read back
};
std::string_view to_string(LedgerFinding::Kind kind);

struct LedgerCheck {
  std::size_t lost = 0;
  std::size_t duplicated = 0;
  std::size_t reappeared = 0;
  std::size_t foreign = 0;
  // Unacknowledged tokens this check settled: stored after all, or not stored.
  std::size_t settled_stored = 0;
  std::size_t settled_absent = 0;
  // Of settled_stored, those whose call got an error response (the reaper's -32001 says
  // the outcome is unknown, so this is allowed).
  std::size_t settled_stored_refused = 0;
  // One per token found wrong: the recorded ones in token order, then the foreign ones.
  std::vector<LedgerFinding> findings;
  bool clean() const { return findings.empty(); }
};

class SessionLedger {
 public:
  // The append of `token` ended with `outcome`. A token is recorded once.
  void record(const std::string& token, AppendOutcome outcome);

  // Checks `read_back` (every token ledger_read returned, in its order) against what was
  // recorded and settles the unacknowledged tokens as described above.
  LedgerCheck check(const std::vector<std::string>& read_back);

  std::size_t size() const { return expect_.size(); }

 private:
  // at_most_once_refused: an unsettled token whose call got an error response.
  enum class Expect { once, at_most_once, at_most_once_refused, never, reported };
  std::map<std::string, Expect> expect_;
};

}  // namespace dorm::torture
