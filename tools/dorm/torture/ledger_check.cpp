#include "ledger_check.hpp"

namespace dorm::torture {

std::string_view to_string(LedgerFinding::Kind kind) {
  switch (kind) {
    case LedgerFinding::Kind::lost:
      return "lost";
    case LedgerFinding::Kind::duplicated:
      return "duplicated";
    case LedgerFinding::Kind::reappeared:
      return "reappeared";
    case LedgerFinding::Kind::foreign:
      return "foreign";
  }
  return "unknown";
}

void SessionLedger::record(const std::string& token, AppendOutcome outcome) {
  expect_.emplace(token, outcome == AppendOutcome::acknowledged ? Expect::once
                         : outcome == AppendOutcome::refused    ? Expect::at_most_once_refused
                                                                : Expect::at_most_once);
}

LedgerCheck SessionLedger::check(const std::vector<std::string>& read_back) {
  std::map<std::string, std::size_t> counts;
  for (const auto& token : read_back) ++counts[token];

  LedgerCheck out;
  auto report = [&](LedgerFinding::Kind kind, const std::string& token, std::size_t count,
                    std::size_t& tally) {
    out.findings.push_back(LedgerFinding{kind, token, count});
    ++tally;
  };
  for (auto& [token, expect] : expect_) {
    auto it = counts.find(token);
    std::size_t n = it == counts.end() ? 0 : it->second;
    if (it != counts.end()) counts.erase(it);
    switch (expect) {
      case Expect::reported:
        break;
      case Expect::once:
        if (n == 0) {
          report(LedgerFinding::Kind::lost, token, n, out.lost);
          expect = Expect::reported;
        } else if (n > 1) {
          report(LedgerFinding::Kind::duplicated, token, n, out.duplicated);
          expect = Expect::reported;
        }
        break;
      case Expect::at_most_once:
      case Expect::at_most_once_refused:
        if (n > 1) {
          report(LedgerFinding::Kind::duplicated, token, n, out.duplicated);
          expect = Expect::reported;
          break;
        }
        ++(n == 1 ? out.settled_stored : out.settled_absent);
        if (n == 1 && expect == Expect::at_most_once_refused) ++out.settled_stored_refused;
        expect = n == 1 ? Expect::once : Expect::never;
        break;
      case Expect::never:
        if (n > 0) {
          report(LedgerFinding::Kind::reappeared, token, n, out.reappeared);
          expect = Expect::reported;
        }
        break;
    }
  }
  // What is left was never appended here; remembered so that it is reported once.
  for (const auto& [token, n] : counts) {
    report(LedgerFinding::Kind::foreign, token, n, out.foreign);
    expect_.emplace(token, Expect::reported);
  }
  return out;
}

}  // namespace dorm::torture
