#include "dorm/mcp/reaper.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <variant>

#include "dorm/mcp/session_keys.hpp"

namespace dorm::mcp {
namespace {

// What happened to one record, once its batch committed.
enum class Outcome { appended, answered, stream_gone };

}  // namespace

std::string_view to_string(ReapReason reason) {
  switch (reason) {
    case ReapReason::server_restart:
      return "server_restart";
    case ReapReason::session_reset:
      return "session_reset";
    case ReapReason::server_draining:
      return "server_draining";
  }
  return "unknown";
}

ReapReason reap_reason(const Epoch& dead, const Epoch& current) {
  return dead.generation < current.generation ? ReapReason::server_restart
                                              : ReapReason::session_reset;
}

std::string interrupted_error(const RequestId& request, ReapReason reason,
                              std::uint64_t dead_generation) {
  // Our own words. It states what is known (the work stopped, nobody knows how far it
  // got) and what to do (look before doing it again); it never suggests a retry, which
  // could repeat a side effect that already happened.
  std::string message;
  switch (reason) {
    case ReapReason::server_restart:
      message = "The server restarted while this request was running, so its work was "
                "interrupted and its outcome is unknown";
      break;
    case ReapReason::session_reset:
      message = "This session was reset while this request was running, so its work was "
                "interrupted and its outcome is unknown";
      break;
    case ReapReason::server_draining:
      message = "The server was shutting down for a deploy and this request did not finish "
                "within its drain window, so its work was stopped and its outcome is unknown";
      break;
  }
  message +=
      ": it may have finished in part or in full, and its side effects may already have "
      "happened. Check the current state before running it again.";
  rapidjson::StringBuffer data;
  rapidjson::Writer<rapidjson::StringBuffer> w(data);
  auto why = to_string(reason);
  w.StartObject();
  w.Key("reason");
  w.String(why.data(), static_cast<rapidjson::SizeType>(why.size()));
  w.Key("retrySafe");
  w.Bool(false);
  w.Key("deadGeneration");
  w.Uint64(dead_generation);
  w.EndObject();
  return error_response(request, kRequestInterrupted, message,
                        std::string_view(data.GetString(), data.GetSize()));
}

std::string ReapReport::reason() const {
  if (server_restart > 0 && session_reset > 0) return "server_restart,session_reset";
  if (server_restart > 0) return std::string(to_string(ReapReason::server_restart));
  if (session_reset > 0) return std::string(to_string(ReapReason::session_reset));
  return {};
}

std::uint64_t ReapReport::dead_generation() const {
  return dead_generations.empty() ? 0 : dead_generations.back();
}

std::string describe(const ReapReport& report) {
  std::string out = "reaped " + std::to_string(report.requests) + " in-flight request(s) on " +
                    std::to_string(report.streams) + " stream(s) left by generation";
  if (report.dead_generations.size() > 1) out += "s";
  for (std::size_t i = 0; i < report.dead_generations.size(); ++i) {
    out += (i == 0 ? " " : ", ") + std::to_string(report.dead_generations[i]);
  }
  auto why = report.reason();
  if (!why.empty()) out += " (" + why + ")";
  return out;
}

Result<Reaper::Plan> Reaper::find(const Epoch& current) {
  auto listing = journal_.list();
  if (!listing) return std::move(listing).error();
  Plan plan;
  plan.unreadable = std::move(listing->unreadable);
  for (auto& record : listing->records) {
    if (!(record.epoch < current)) continue;  // running (or not ours to judge)
    auto stream = log_.stream(record.stream);
    if (!stream && stream.error().code == ErrorCode::corruption) {
      // Left in place like an unreadable record: one bad stream must not keep the whole
      // session from starting, and nothing can be appended to it anyway.
      plan.unreadable.emplace_back(session_keys::journal(record.request), std::move(stream).error());
      continue;
    }
    if (!stream) return std::move(stream).error();
    if (*stream && (*stream)->request.empty()) {
      // A standalone stream answers no request: a record naming it is not ours to settle.
      ++plan.standalone;
      continue;
    }
    plan.dead.push_back(std::move(record));
  }
  std::sort(plan.dead.begin(), plan.dead.end(), [](const JournalRecord& a, const JournalRecord& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.request < b.request;
  });
  return plan;
}

bool Reaper::answered(const std::vector<StoredEvent>& events, const RequestId& request) {
  for (const auto& e : events) {
    auto parsed = parse_body(e.data);
    const auto* body = std::get_if<ParsedBody>(&parsed);
    if (!body) continue;
    for (const auto& m : body->messages) {
      if (m.is_response() && m.id == request) return true;
    }
  }
  return false;
}

ReapReport Reaper::run(const Plan& plan, const Epoch& current, std::int64_t now_ms,
                       const Commit& commit) {
  ReapReport report;
  report.standalone = plan.standalone;
  auto fail = [&](Error e) {
    report.failure = std::move(e);
    return report;
  };
  const auto& dead = plan.dead;
  for (std::size_t first = 0; first < dead.size();) {
    const std::uint64_t stream = dead[first].stream;
    std::size_t end = first;
    while (end < dead.size() && dead[end].stream == stream) ++end;

    auto found = log_.stream(stream);
    if (!found) return fail(std::move(found).error());
    const std::optional<StreamRecord>& record = *found;
    std::vector<StoredEvent> events;
    if (record) {
      auto read = log_.events(stream);
      if (!read) return fail(std::move(read).error());
      events = std::move(*read);
    }

    bool stream_counted = false;
    for (std::size_t i = first; i < end; ++i) {
      const JournalRecord& r = dead[i];
      Outcome outcome = Outcome::stream_gone;
      if (record && answered(events, r.request)) {
        outcome = Outcome::answered;
      } else if (record && !record->finished) {
        ReapReason why = reap_reason(r.epoch, current);
        auto appended = log_.append(stream, interrupted_error(r.request, why, r.epoch.generation));
        if (!appended) return fail(std::move(appended).error());
        outcome = Outcome::appended;
      }
      // The stream ends with its last dead record's batch: a crash before then leaves
      // it open for the records still to come.
      bool finish = i + 1 == end && record && !record->finished;
      if (finish) {
        if (auto ok = log_.finish(stream, now_ms); !ok) return fail(std::move(ok).error());
      }
      // Only now, with its outcome in this batch, does the record go.
      if (auto ok = journal_.del(r.request); !ok) return fail(std::move(ok).error());
      if (auto ok = commit(Step{r, outcome == Outcome::appended, finish}); !ok) {
        return fail(std::move(ok).error());
      }

      switch (outcome) {
        case Outcome::appended:
          ++report.requests;
          if (reap_reason(r.epoch, current) == ReapReason::server_restart) {
            ++report.server_restart;
          } else {
            ++report.session_reset;
          }
          if (!stream_counted) {
            ++report.streams;
            stream_counted = true;
          }
          break;
        case Outcome::answered:
          ++report.answered;
          break;
        case Outcome::stream_gone:
          ++report.stream_gone;
          break;
      }
      auto& gens = report.dead_generations;
      if (auto at = std::lower_bound(gens.begin(), gens.end(), r.epoch.generation);
          at == gens.end() || *at != r.epoch.generation) {
        gens.insert(at, r.epoch.generation);
      }
    }
    first = end;
  }
  return report;
}

}  // namespace dorm::mcp
