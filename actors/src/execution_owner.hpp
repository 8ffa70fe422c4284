// The execution-owner directory: which session owns a paused execution, so that `resume`
// works from any session of the same principal (docs/code-mode.md#resuming-from-another-session).
//
// One durable object per execution id in the namespace "execution-owner" (key "owner":
// the record), deleted by an alarm at the execution's deadline, by the owner when the
// execution settles, or by a reader that finds it expired. The owner session writes it in
// the turn that pauses the execution (the message leaves when that turn commits). Also
// the messages sessions send each other to forward a resume to the owner. Internal to
// actors/src.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct OwnerRecord {
  std::string execution_id;
  std::string session_object;  // the owner session's object id (ObjectId::to_string)
  mcp::Identity principal;     // who may resume it
  std::int64_t expires_at_ms = 0;
  std::int64_t ttl_ms = 0;
  std::string to_json() const;
  static std::optional<OwnerRecord> from_json(std::string_view text);
};

// Stores the record (replacing one for the same id) and its expiry alarm. Replies true.
struct OwnerPut {
  OwnerRecord record;
};
// Replies with the record's JSON, or "" when there is none or it expired.
struct OwnerGet {
  std::string execution_id;
};
// Deletes the record if it is for that id. Replies true.
struct OwnerDelete {
  std::string execution_id;
};

// A session asks the owner session to resume one of its executions on behalf of `caller`;
// the owner answers with ForwardedResumeResult{token} to `from_session`.
struct ForwardedResume {
  std::string execution_id;
  std::string action;
  std::string content_json;
  mcp::Identity caller;
  std::string from_session;  // object id of the asking session
  std::uint64_t token = 0;
};
struct ForwardedResumeResult {
  std::uint64_t token = 0;
  std::string result_json;  // a CallToolResult
};

// The object handle for `execution_id`'s record.
Result<ObjectHandle> owner_handle(Runtime& runtime, std::string_view execution_id);
// Registers the namespace (register_mcp_session does, when code mode is on). Records
// written and removed are counted in `counters` (SessionCounters::executions_paused and
// executions_unpaused) when it is not null; it must outlive the runtime.
Result<void> register_execution_owner(Runtime& runtime, SessionCounters* counters = nullptr);

}  // namespace dorm::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::OwnerPut)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::OwnerGet)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::OwnerDelete)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::ForwardedResume)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::ForwardedResumeResult)

namespace dorm::actors {

// Who is answering on the approval page: the holder of the link's one-time token, or a
// caller whose bearer token the server authenticated (then `bearer` names them and
// `token` is empty). The session accepts the first only if the token matches and the
// second only if it is the execution's owner.
struct ApprovalCredential {
  std::string token;
  std::optional<mcp::Identity> bearer;
};

// The approval page asks the owner session about a paused execution (view) or records
// the person's answer (decide). Both reply with a JSON object: {"tool","args","expiresAt"}
// for a view, {"decided":"accept"|"decline"} for a decision, or {"error", "status"} with
// an HTTP status (404: no such paused execution; 403: wrong, used or expired token, or
// another user's bearer token).
struct ApprovalView {
  std::string execution_id;
  ApprovalCredential credential;
};
struct ApprovalDecision {
  std::string execution_id;
  ApprovalCredential credential;
  std::string action;  // accept | decline
};

}  // namespace dorm::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::ApprovalView)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dorm::actors::ApprovalDecision)
