#include "report.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dorm::deploy_sim {
namespace {

// The reasons every JSON row names, so scripts need not test for their presence.
constexpr const char* kNamedReasons[] = {"server_restart", "server_draining"};

std::string seconds(double ms) {
  char out[32];
  std::snprintf(out, sizeof out, "%.2f s", ms / 1000.0);
  return out;
}

std::string seconds_or_dash(const std::optional<double>& ms) {
  return ms ? seconds(*ms) : "-";
}

std::string reasons_text(const RowSummary& row) {
  std::string out;
  for (const auto& [reason, n] : row.reasons) {
    if (!out.empty()) out += ", ";
    out += reason + " " + std::to_string(n);
  }
  return out;
}

std::string header_line(const ReportHeader& h) {
  char out[256];
  std::snprintf(out, sizeof out,
                "dorm %s deploy-sim, seed %llu: %d sessions x %d calls, %d deploys, calls of "
                "%lld-%lld ms, client timeout %g s, drain timeout %g s",
                h.version.c_str(), static_cast<unsigned long long>(h.seed), h.sessions,
                h.calls_per_session, h.deploys, static_cast<long long>(h.call_ms_min),
                static_cast<long long>(h.call_ms_max), h.client_timeout_s, h.drain_timeout_s);
  return out;
}

const std::vector<std::string> kColumns = {"variant",   "mode",     "retry",       "gap",
                                           "calls",     "answered", "failed fast", "error p50",
                                           "error p99", "hung",     "unanswered",  "reasons"};

std::vector<std::string> cells(const RowSummary& r) {
  return {r.key.variant,
          r.key.mode,
          std::to_string(r.key.retry_ms) + " ms",
          std::to_string(r.key.restart_gap_ms) + " ms",
          std::to_string(r.calls),
          std::to_string(r.answered),
          std::to_string(r.failed_fast),
          seconds_or_dash(r.error_ms_p50),
          seconds_or_dash(r.error_ms_p99),
          std::to_string(r.hung),
          seconds(r.unanswered_ms_max),
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
      "client's error; unanswered: the longest time no server answered on the port.\n";
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

void write_ms(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::optional<double>& ms) {
  if (ms) {
    w.Double(std::round(*ms * 10) / 10);
  } else {
    w.Null();
  }
}

void write_row(rapidjson::Writer<rapidjson::StringBuffer>& w, const RowSummary& r) {
  w.StartObject();
  w.Key("variant");
  w.String(r.key.variant.c_str());
  w.Key("mode");
  w.String(r.key.mode.c_str());
  w.Key("retry_ms");
  w.Int64(r.key.retry_ms);
  w.Key("restart_gap_ms");
  w.Int64(r.key.restart_gap_ms);
  w.Key("calls");
  w.Int(r.calls);
  w.Key("answered");
  w.Int(r.answered);
  w.Key("failed_fast");
  w.Int(r.failed_fast);
  w.Key("hung");
  w.Int(r.hung);
  w.Key("error_ms_p50");
  write_ms(w, r.error_ms_p50);
  w.Key("error_ms_p99");
  write_ms(w, r.error_ms_p99);
  w.Key("reasons");
  w.StartObject();
  auto reasons = r.reasons;
  for (const char* named : kNamedReasons) reasons.try_emplace(named, 0);
  for (const auto& [reason, n] : reasons) {
    w.Key(reason.c_str(), static_cast<rapidjson::SizeType>(reason.size()));
    w.Int(n);
  }
  w.EndObject();
  w.Key("unanswered_ms_max");
  write_ms(w, r.unanswered_ms_max);
  w.EndObject();
}

}  // namespace

std::string format_json(const ReportHeader& h, const std::vector<RowSummary>& rows) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("version");
  w.String(h.version.c_str());
  w.Key("seed");
  w.Uint64(h.seed);
  w.Key("sessions");
  w.Int(h.sessions);
  w.Key("calls_per_session");
  w.Int(h.calls_per_session);
  w.Key("deploys");
  w.Int(h.deploys);
  w.Key("call_ms");
  w.StartArray();
  w.Int64(h.call_ms_min);
  w.Int64(h.call_ms_max);
  w.EndArray();
  w.Key("client_timeout_s");
  w.Double(h.client_timeout_s);
  w.Key("drain_timeout_s");
  w.Double(h.drain_timeout_s);
  w.Key("rows");
  w.StartArray();
  for (const auto& r : rows) write_row(w, r);
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace dorm::deploy_sim
