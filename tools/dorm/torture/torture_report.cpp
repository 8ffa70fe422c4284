#include "torture_report.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>

#include "version.hpp"

namespace dorm::torture {
namespace {

std::string seconds_or_dash(const std::optional<std::int64_t>& ms) {
  if (!ms) return "-";
  char out[32];
  std::snprintf(out, sizeof out, "%.2f s", static_cast<double>(*ms) / 1000.0);
  return out;
}

std::string row(const char* name, const std::string& value, const char* note = "") {
  char out[512];
  std::snprintf(out, sizeof out, "  %-22s %12s%s%s\n", name, value.c_str(), *note ? "  " : "",
                note);
  return out;
}

std::string row(const char* name, std::size_t value, const char* note = "") {
  return row(name, std::to_string(value), note);
}

}  // namespace

std::string format_text(const TortureTotals& t) {
  char head[256];
  std::snprintf(head, sizeof head,
                "dorm %s torture, seed %llu: %d of %d cycles, %d concurrent sessions, %s, "
                "retry %lld ms, %.0f s\n",
                kVersion, static_cast<unsigned long long>(t.seed), t.cycles, t.cycles_planned,
                t.lanes, t.storage.c_str(), static_cast<long long>(t.retry_ms), t.wall_s);
  std::string out = head;
  out += row("sessions", t.sessions, "opened, new ones included");
  out += row("sessions not opened", t.sessions_not_opened, "a kill interrupted initialize");
  out += row("calls", t.calls);
  out += row("appends", t.appends);
  out += row("acked", t.acked, "appends answered with a result");
  out += row("appends hit by a kill", t.appends_hit);
  out += row("  acked all the same", t.appends_hit_acked, "the result came after the kill");
  out += row("unacked, stored", t.unacked_stored, "allowed: at most once");
  out += row("  after an error", t.unacked_stored_after_error, "the rest: no response");
  out += row("unacked, not stored", t.unacked_absent);
  out += row("errors", t.errors, "error responses and failed POSTs");
  out += row("reaped", t.reaped, "-32001 from the reaper");
  out += row("errors without a kill", t.errors_without_kill);
  for (const auto& [reason, n] : t.errors_without_kill_reasons) {
    std::string label = "  " + reason;
    out += row(label.c_str(), n);
  }
  out += row("error p50", seconds_or_dash(t.error_ms_p50), "from the kill");
  out += row("error p99", seconds_or_dash(t.error_ms_p99));
  out += row("error max", seconds_or_dash(t.error_ms_max));
  out += row("restart p50", seconds_or_dash(t.restart_ms_p50), "kill to ready");
  out += row("restart max", seconds_or_dash(t.restart_ms_max));
  out += row("lost", t.lost, "acked, then missing");
  out += row("duplicated", t.duplicated, "present more than once");
  out += row("reappeared", t.reappeared, "unacked, absent, then present");
  out += row("foreign", t.foreign, "never appended to that session");
  out += row("hung", t.hung, "not ended within R + 2 s of the restart");
  out += row("sessions lost", t.sessions_lost, "no longer answering with their id");
  for (const auto& f : t.findings) out += "  ! " + f + "\n";
  if (t.stopped.empty()) {
    out += t.violated() ? "result: FAILED\n" : "result: ok\n";
  } else {
    out += "result: STOPPED: " + t.stopped + "\n";
  }
  return out;
}

std::string format_json(const TortureTotals& t) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto count = [&](const char* key, std::size_t value) {
    w.Key(key);
    w.Uint64(value);
  };
  auto ms = [&](const char* key, const std::optional<std::int64_t>& value) {
    w.Key(key);
    if (value) {
      w.Int64(*value);
    } else {
      w.Null();
    }
  };
  w.StartObject();
  w.Key("version");
  w.String(kVersion);
  w.Key("seed");
  w.Uint64(t.seed);
  w.Key("storage");
  w.String(t.storage.c_str(), static_cast<rapidjson::SizeType>(t.storage.size()));
  w.Key("sessions_concurrent");
  w.Int(t.lanes);
  w.Key("retry_ms");
  w.Int64(t.retry_ms);
  w.Key("cycles_planned");
  w.Int(t.cycles_planned);
  w.Key("cycles");
  w.Int(t.cycles);
  count("sessions", t.sessions);
  count("sessions_not_opened", t.sessions_not_opened);
  count("calls", t.calls);
  count("appends", t.appends);
  count("acked", t.acked);
  count("appends_hit", t.appends_hit);
  count("appends_hit_acked", t.appends_hit_acked);
  count("unacked_stored", t.unacked_stored);
  count("unacked_stored_after_error", t.unacked_stored_after_error);
  count("unacked_absent", t.unacked_absent);
  count("errors", t.errors);
  count("reaped", t.reaped);
  count("errors_without_kill", t.errors_without_kill);
  w.Key("errors_without_kill_reasons");
  w.StartObject();
  for (const auto& [reason, n] : t.errors_without_kill_reasons) {
    w.Key(reason.c_str(), static_cast<rapidjson::SizeType>(reason.size()));
    w.Uint64(n);
  }
  w.EndObject();
  count("lost", t.lost);
  count("duplicated", t.duplicated);
  count("reappeared", t.reappeared);
  count("foreign", t.foreign);
  count("hung", t.hung);
  count("sessions_lost", t.sessions_lost);
  ms("error_ms_p50", t.error_ms_p50);
  ms("error_ms_p99", t.error_ms_p99);
  ms("error_ms_max", t.error_ms_max);
  ms("restart_ms_p50", t.restart_ms_p50);
  ms("restart_ms_max", t.restart_ms_max);
  w.Key("wall_s");
  w.Double(t.wall_s);
  w.Key("findings");
  w.StartArray();
  for (const auto& f : t.findings) w.String(f.c_str(), static_cast<rapidjson::SizeType>(f.size()));
  w.EndArray();
  w.Key("stopped");
  if (t.stopped.empty()) {
    w.Null();
  } else {
    w.String(t.stopped.c_str(), static_cast<rapidjson::SizeType>(t.stopped.size()));
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace dorm::torture
