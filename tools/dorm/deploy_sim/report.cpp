#include "report.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <type_traits>

namespace dorm::deploy_sim {
namespace {

// The reasons every JSON row names, so scripts need not test for their presence.
constexpr const char* kNamedReasons[] = {"server_restart", "server_draining"};

std::string seconds(double ms) {
  char out[32];
  std::snprintf(out, sizeof out, "%.2f s", ms / 1000.0);
  return out;
}

template <typename Ms>
std::string seconds_or_dash(const std::optional<Ms>& ms) {
  return ms ? seconds(static_cast<double>(*ms)) : "-";
}

std::string reasons_text(const RowSummary& row) {
  std::string out;
  for (const auto& [reason, n] : row.outcomes.reasons) {
    if (!out.empty()) out += ", ";
    out += reason + " " + std::to_string(n);
  }
  return out;
}

std::string header_line(const ReportHeader& h) {
  // "on virtual time", "over postgres", "3 nodes over postgres"; nothing for the default.
  std::string where = h.virtual_time ? " on virtual time" : "";
  if (h.nodes > 1) {
    where = " of " + std::to_string(h.nodes) + " nodes over " + h.storage;
  } else if (!h.virtual_time && h.storage != "rocksdb") {
    where = " over " + h.storage;
  }
  char out[320];
  std::snprintf(out, sizeof out,
                "dorm %s deploy-sim%s, seed %llu: %d sessions x %d calls, %d deploys, calls of "
                "%lld-%lld ms, client timeout %g s, drain timeout %g s",
                h.version.c_str(), where.c_str(),
                static_cast<unsigned long long>(h.seed), h.sessions, h.calls_per_session, h.deploys,
                static_cast<long long>(h.call_ms_min), static_cast<long long>(h.call_ms_max),
                h.client_timeout_s, h.drain_timeout_s);
  return out;
}

const std::vector<std::string> kColumns = {"variant",   "mode",     "retry",       "gap",
                                           "calls",     "answered", "failed fast", "error p50",
                                           "error p99", "hung",     "unanswered",  "reasons"};

std::vector<std::string> cells(const RowSummary& r) {
  const auto& o = r.outcomes;
  return {r.key.variant,
          r.key.mode,
          std::to_string(r.key.retry_ms) + " ms",
          std::to_string(r.key.restart_gap_ms) + " ms",
          std::to_string(o.calls),
          std::to_string(o.answered),
          std::to_string(o.failed),
          seconds_or_dash(o.error_ms_p50),
          seconds_or_dash(o.error_ms_p99),
          std::to_string(o.hung),
          seconds_or_dash(r.unanswered_ms_max),
          reasons_text(r)};
}

// Columns 0-1 and the last hold words (left-aligned); the rest hold numbers.
bool left_aligned(std::size_t column) {
  return column < 2 || column + 1 == kColumns.size();
}

}  // namespace

std::string format_text(const ReportHeader& header, const std::vector<RowSummary>& rows) {
  std::vector<std::vector<std::string>> table{kColumns};
  for (const auto& r : rows) table.push_back(cells(r));
  std::vector<std::size_t> width(kColumns.size(), 0);
  for (const auto& line : table)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out = header_line(header) + "\n";
  for (const auto& line : table) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      std::string pad(width[i] - line[i].size(), ' ');
      if (i > 0) text += "  ";
      text += left_aligned(i) ? line[i] + pad : pad + line[i];
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  out +=
      "hung: no outcome by the client's timeout; error times are from the deploy to the "
      "client's error; unanswered: the longest time no server answered on the port";
  out += header.virtual_time ? " (none on virtual time).\n" : ".\n";
  return out;
}

std::string format_markdown(const ReportHeader& header, const std::vector<RowSummary>& rows) {
  std::string out = header_line(header) + "\n\n|";
  std::string rule = "|";
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    out += " " + kColumns[i] + " |";
    rule += left_aligned(i) ? " --- |" : " ---: |";
  }
  out += "\n" + rule + "\n";
  for (const auto& r : rows) {
    out += "|";
    for (auto& cell : cells(r)) out += " " + (cell.empty() ? std::string("-") : cell) + " |";
    out += "\n";
  }
  return out;
}

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// Writes members of the object being written, one `"key": value` per call.
class Members {
 public:
  explicit Members(JsonWriter& w) : w_(w) {}

  template <std::integral T>
  Members& operator()(const char* key, T value) {
    w_.Key(key);
    if constexpr (std::is_unsigned_v<T>) {
      w_.Uint64(value);
    } else {
      w_.Int64(value);
    }
    return *this;
  }
  Members& operator()(const char* key, bool value) {
    w_.Key(key);
    w_.Bool(value);
    return *this;
  }
  Members& operator()(const char* key, double value) {
    w_.Key(key);
    w_.Double(value);
    return *this;
  }
  Members& operator()(const char* key, const std::string& value) {
    w_.Key(key);
    w_.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
    return *this;
  }
  // Milliseconds to a tenth, or null when unset.
  Members& operator()(const char* key, const std::optional<double>& ms) {
    if (!ms) return null(key);
    w_.Key(key);
    w_.Double(std::round(*ms * 10) / 10);
    return *this;
  }
  template <std::integral T>
  Members& operator()(const char* key, const std::optional<T>& value) {
    return value ? (*this)(key, *value) : null(key);
  }

 private:
  Members& null(const char* key) {
    w_.Key(key);
    w_.Null();
    return *this;
  }

  JsonWriter& w_;
};

void write_row(JsonWriter& w, const RowSummary& r) {
  const auto& o = r.outcomes;
  w.StartObject();
  Members m(w);
  m("variant", r.key.variant)("mode", r.key.mode);
  m("retry_ms", r.key.retry_ms)("restart_gap_ms", r.key.restart_gap_ms);
  m("calls", o.calls)("answered", o.answered)("failed_fast", o.failed)("hung", o.hung);
  m("error_ms_p50", o.error_ms_p50)("error_ms_p99", o.error_ms_p99);
  w.Key("reasons");
  w.StartObject();
  auto reasons = o.reasons;
  for (const char* named : kNamedReasons) reasons.try_emplace(named, 0);
  for (const auto& [reason, n] : reasons) m(reason.c_str(), n);
  w.EndObject();
  m("unanswered_ms_max", r.unanswered_ms_max)("unanswered_probes", r.unanswered_probes);
  w.EndObject();
}

}  // namespace

std::string format_json(const ReportHeader& h, const std::vector<RowSummary>& rows) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  Members m(w);
  m("version", h.version)("seed", h.seed);
  m("sessions", h.sessions)("calls_per_session", h.calls_per_session)("deploys", h.deploys);
  w.Key("call_ms");
  w.StartArray();
  w.Int64(h.call_ms_min);
  w.Int64(h.call_ms_max);
  w.EndArray();
  m("client_timeout_s", h.client_timeout_s)("drain_timeout_s", h.drain_timeout_s);
  m("virtual", h.virtual_time)("nodes", h.nodes)("storage", h.storage);
  w.Key("rows");
  w.StartArray();
  for (const auto& r : rows) write_row(w, r);
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace dorm::deploy_sim
