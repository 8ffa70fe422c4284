// Code mode inside a session, the way back in: `resume` (here, or through the
// execution-owner directory at the session that owns the execution), the approval alarm's
// decline, and continuing a paused execution from its record and journal. The rest of the
// flow is in mcp_session_code.cpp; the record layout in mcp_session_code.hpp.
#include "mcp_session_code.hpp"

#include <rapidjson/document.h>

#include "dorm/actors/namespaces.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;
using namespace code_detail;

void McpSession::Code::resume(const std::shared_ptr<CallContext>& call) {
  rapidjson::Document args;
  args.Parse(call->arguments().c_str());
  const rapidjson::Value* id_value = member(args, "executionId");
  const rapidjson::Value* action_value = member(args, "action");
  const rapidjson::Value* content_value = member(args, "content");
  if (!id_value || !id_value->IsString() || !action_value || !action_value->IsString()) {
    return call->finish(mcp::ToolResult::error("resume needs executionId and action (accept, decline or cancel)"));
  }
  const std::string id = id_value->GetString();
  Answer answer{action_value->GetString(), "{}"};
  if (answer.action != "accept" && answer.action != "decline" && answer.action != "cancel") {
    return call->finish(mcp::ToolResult::error("action must be accept, decline or cancel"));
  }
  if (content_value && content_value->IsString()) {
    rapidjson::Document content;
    content.Parse(content_value->GetString(), content_value->GetStringLength());
    if (content.HasParseError() || !content.IsObject()) {
      return call->finish(mcp::ToolResult::error("content must be a JSON object, as a string (default \"{}\")"));
    }
    answer.content_json = compact(content);
  }
  if (resume_here(id, answer, Waiter{call, {}})) return;
  resume_elsewhere(id, std::move(answer), call);
}

bool McpSession::Code::resume_here(const std::string& id, const Answer& answer, const Waiter& waiter) {
  // Already resuming (another resume, or the approval timeout): wait for the same outcome.
  if (auto it = live_.find(id); it != live_.end()) {
    if (it->second->warm) {
      resume_warm(it->second, answer, waiter);
    } else {
      it->second->waiters.push_back(waiter);
      watch_cancel(it->second, waiter);
    }
    return true;
  }
  auto reply = [&](const mcp::ToolResult& result) {
    if (waiter.call) waiter.call->finish(result);
    if (waiter.done) waiter.done(result);
  };
  if (auto settled = read_settled(id)) {
    reply(*settled);
    return true;
  }
  auto record = read_record(id);
  if (!record) return false;
  continue_paused(std::move(*record), answer, waiter);
  return true;
}

void McpSession::Code::resume_elsewhere(const std::string& id, Answer answer, const std::shared_ptr<CallContext>& call) {
  auto directory = owner_handle(session_.runtime(), id);
  if (!directory) {
    return call->finish(mcp::format_resume_unavailable(mcp::ResumeUnavailable::execution_not_found, id, 0));
  }
  const std::int64_t ttl = options_.approval_timeout.count();
  auto expired = [id, ttl] { return mcp::format_resume_unavailable(mcp::ResumeUnavailable::execution_expired, id, ttl); };
  session_.request(*directory, [this, id, answer, call, expired](caf::expected<caf::message> reply) {
    if (call->finished()) return;
    std::optional<OwnerRecord> record;
    if (reply && reply->match_elements<std::string>() && !reply->get_as<std::string>(0).empty()) {
      record = OwnerRecord::from_json(reply->get_as<std::string>(0));
    }
    // No owner on record: it expired, settled and was forgotten, or never existed.
    if (!record) return call->finish(expired());
    if (!(record->principal == session_.meta_->owner)) {
      log::warn("execution_forbidden", {{"session", session_.session_id_}, {"execution", id}});
      return call->finish(mcp::format_resume_unavailable(mcp::ResumeUnavailable::execution_forbidden, id, 0));
    }
    auto owner = session_.runtime().parse_id(kMcpSessionNamespace, record->session_object);
    if (!owner || record->session_object == session_.id().to_string()) {
      // This session owned it and no longer has it: the directory entry is stale.
      tell_directory(caf::make_message(OwnerDelete{id}), id);
      return call->finish(expired());
    }
    std::uint64_t token = ++forward_sequence_;
    forwarded_[token] = call;
    session_.send(ObjectHandle{*owner}, ForwardedResume{id, answer.action, answer.content_json, session_.meta_->owner,
                                                         session_.id().to_string(), token});
    // The owner answers within 10 s or the execution counts as expired (the original's rule).
    session_.after(std::chrono::seconds(10), [this, token, expired] {
      auto it = forwarded_.find(token);
      if (it == forwarded_.end()) return;
      auto waiting = it->second;
      forwarded_.erase(it);
      waiting->finish(expired());
    });
  }, OwnerGet{id});
}

void McpSession::Code::forwarded_resume(const ForwardedResume& request) {
  auto from = session_.runtime().parse_id(kMcpSessionNamespace, request.from_session);
  if (!from) return;
  ObjectHandle back{*from};
  auto answer_with = [this, back, token = request.token](const mcp::ToolResult& result) {
    session_.send(back, ForwardedResumeResult{token, result.json});
  };
  if (!session_.meta_) {
    // The owner session is gone (deleted): nothing stored here, so nothing stays in memory.
    session_.dispose_empty();
    return answer_with(mcp::format_resume_unavailable(mcp::ResumeUnavailable::execution_expired, request.execution_id,
                                                      options_.approval_timeout.count()));
  }
  if (!(request.caller == session_.meta_->owner)) {
    return answer_with(mcp::format_resume_unavailable(mcp::ResumeUnavailable::execution_forbidden, request.execution_id, 0));
  }
  Answer answer{request.action, request.content_json};
  if (resume_here(request.execution_id, answer, Waiter{nullptr, answer_with})) return;
  tell_directory(caf::make_message(OwnerDelete{request.execution_id}), request.execution_id);
  answer_with(mcp::format_resume_unavailable(mcp::ResumeUnavailable::execution_expired, request.execution_id,
                                             options_.approval_timeout.count()));
}

void McpSession::Code::forwarded_result(const ForwardedResumeResult& result) {
  auto it = forwarded_.find(result.token);
  if (it == forwarded_.end()) return;  // too late: it counted as expired already
  auto call = it->second;
  forwarded_.erase(it);
  call->finish(mcp::ToolResult{result.result_json});
}
void McpSession::Code::tell_directory(caf::message message, const std::string& id) {
  if (auto directory = owner_handle(session_.runtime(), id)) session_.send_message(*directory, std::move(message));
}

void McpSession::Code::continue_paused(Record record, Answer answer, std::optional<Waiter> waiter) {
  if (record.state == "running") {
    // A resumption that an activation before this one started, and that died with it:
    // its tools may have run, so it is not run again.
    mcp::ExecutionOutcome outcome;
    outcome.status = mcp::ExecutionOutcome::Status::error;
    outcome.error = "the execution was interrupted by a server restart while it ran after its approval; "
                    "its outcome is unknown (its tools may have run): check state before running it again";
    auto result = mcp::format_execution_outcome(outcome);
    log::warn("execution_interrupted", {{"session", session_.session_id_}, {"execution", record.id}});
    settle_record(record.id, result);
    if (waiter && waiter->call) waiter->call->finish(result);
    if (waiter && waiter->done) waiter->done(result);
    return;
  }
  engine::Journal journal = read_journal(record);
  engine::OpenEffects open = engine::open_effects(journal);
  auto live = start(record.id, record.code, std::move(journal), std::move(waiter));
  if (!live) return;  // the engine refused it (full queue): still paused, resumable again
  record.state = "running";
  write_record(record, nullptr);
  session_.del(session_keys::approval_answer(record.id)).value_or_throw();
  live->answer = std::move(answer);
  live->answer_seq = record.pause.seq;
  // The calls the journal left open were made before the pause and never answered: the
  // host answers them now, as it would have (the replayed code does not make them again).
  for (const auto& call : open.calls) {
    if (live->ended) break;
    on_tool_call(live, call);
  }
  run_held(live);
}

bool McpSession::Code::on_alarm(const AlarmInfo& info) {
  auto approval = session_keys::parse_approval_alarm(info.name);
  if (!approval) return false;
  const std::string id(*approval);
  if (auto it = live_.find(id); it != live_.end() && it->second->warm) {
    // Still warm at its deadline (a window longer than the approval timeout): decline it
    // in place.
    Answer answer{"decline", R"({"reason":"approval_timeout"})"};
    if (auto recorded = take_answer(id)) answer = std::move(*recorded);
    log::info("mcp_pending_approval_lease_expire", {{"session", session_.session_id_}, {"execution", id}});
    resume_warm(it->second, std::move(answer), std::nullopt);
    return true;
  }
  if (live_.count(id)) {
    // Running here already: its own outcome settles it. The alarm stays armed, so a record
    // left `running` by an activation that dies meanwhile is still settled some day.
    session_.set_alarm(info.name, session_.clock().now_ms() + options_.approval_timeout.count()).value_or_throw();
    return true;
  }
  auto record = read_record(id);
  if (!record) return true;
  Answer answer{"decline", R"({"reason":"approval_timeout"})"};
  if (auto recorded = take_answer(id)) {
    answer = std::move(*recorded);
  } else if (record->state == "paused") {
    log::info("mcp_pending_approval_lease_expire", {{"session", session_.session_id_}, {"execution", id}});
  }
  continue_paused(std::move(*record), std::move(answer), std::nullopt);
  return true;
}

}  // namespace dorm::actors
