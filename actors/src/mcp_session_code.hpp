// Code mode inside one session (see dorm/actors/code_mode.hpp and docs/code-mode.md):
// running executions, the tools their code calls, approvals, pausing to storage and
// resuming by replay. Internal to actors/src.
//
// Storage layout, under the session's keys:
//   x/r/<execution id>       the paused execution's record (JSON: pause point, deadline, state)
//   x/j/<execution id>/<n>   its code and journal (u32 code length, code, the journal in the
//                            engine's encoding), in chunks of at most 64 KiB
//   x/o/<execution id>       a resumed execution's final result (the last `settled_kept`)
//   approval-response:<id>   an answer recorded for a paused execution, taken when it resumes
//   c/<key>                  tools.storage.* (JSON values)
// and one alarm per paused execution, "approval/<id>", at its deadline.
//
// A record's state is `paused` (waiting; no isolate anywhere) or `running` (a resumption
// started it in some activation). A `running` record that this activation does not run
// belongs to one that died: whatever it did is unknown, so it settles as an error, and the
// approved tool never runs twice.
#pragma once

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "code_builtins.hpp"
#include "dorm/actors/code_mode.hpp"
#include "dorm/engine/journal.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/hex.hpp"
#include "dorm/mcp/execution_outcome.hpp"
#include "execution_owner.hpp"
#include "mcp_session_internal.hpp"

namespace dorm::actors {

// Keys and small helpers shared by the code-mode files.
namespace code_detail {

using session_internal::JsonWriter;


// Journal chunks stay well under the storage value limit (128 KiB by default).
inline constexpr std::size_t kChunkBytes = 64 * 1024;
using code_builtins::kApprovalSchema;

inline std::string random_hex(std::size_t bytes) {
  std::vector<std::uint8_t> raw(bytes);
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) throw std::runtime_error("RAND_bytes failed");
  return hex_encode(raw);
}

inline std::string sha256_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("EVP_Digest failed");
  }
  return hex_encode(std::span<const std::uint8_t>(digest, size));
}

inline std::string page_reply(int status, std::string_view error) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("status");
  w.Int(status);
  w.Key("error");
  w.String(error.data(), static_cast<rapidjson::SizeType>(error.size()));
  w.EndObject();
  return buffer.GetString();
}

inline std::string json_string(std::string_view text) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return buffer.GetString();
}

}  // namespace code_detail

class McpSession::Code {
 public:
  Code(McpSession& session, const CodeModeOptions& options);
  // Cancels what this activation still runs: an activation that ends takes its isolates
  // with it (a paused execution has none).
  ~Code();

  void execute(const std::shared_ptr<CallContext>& call);
  void resume(const std::shared_ptr<CallContext>& call);
  // Another session forwards a resume of an execution this one owns; the outcome goes
  // back to it as a ForwardedResumeResult.
  void forwarded_resume(const ForwardedResume& request);
  // The owner's answer to a resume this session forwarded.
  void forwarded_result(const ForwardedResumeResult& result);
  // The approval page (approval_page.hpp): what a paused execution waits on, and the
  // person's answer, which continues it at once. JSON replies (see ApprovalView).
  std::string approval_view(const ApprovalView& request);
  std::string approval_decide(const ApprovalDecision& request);
  // An "approval/<id>" alarm; false for any other alarm.
  bool on_alarm(const AlarmInfo& info);
  // Paused executions stored in this session (the idle policy's paused work).
  bool has_paused();
  // Executions this activation runs (warm paused ones do not count).
  bool running() const {
    for (const auto& [id, live] : live_) {
      if (!is_warm(*live)) return true;
    }
    return false;
  }
  // Deletes everything code mode stored (the session is being erased).
  void erase();

  struct Live;
  // Who waits for an execution's outcome: a client's execute or resume call, or a
  // forwarded resume (done).
  struct Waiter {
    std::shared_ptr<CallContext> call;
    std::function<void(const mcp::ToolResult&)> done;
  };
  struct Answer {
    std::string action;  // accept | decline | cancel
    std::string content_json = "{}";
  };

 private:
  class Observer;
  struct Record {
    std::string id;
    std::string code;
    std::string state;  // paused | running
    engine::ToolCallEntry pause;
    std::int64_t expires_at_ms = 0;
    std::int64_t ttl_ms = 0;
    std::uint32_t chunks = 0;
    std::string approval_token_sha256;  // hex; empty: no (more) approval link
    std::string to_json() const;
    static std::optional<Record> from_json(std::string_view text);
  };

  std::shared_ptr<Live> start(const std::string& id, const std::string& code,
                              std::optional<engine::Journal> journal, std::optional<Waiter> waiter);
  // Runs what the engine reported during start() (Live::held); the caller of start() calls
  // it once its own setup is done, so the reports find the execution as they would have in
  // a later turn.
  void run_held(const std::shared_ptr<Live>& live);
  // resume, for the owner: join a running resumption, answer a settled outcome, or
  // continue the stored record; false if this session knows nothing of `id`.
  bool resume_here(const std::string& id, const Answer& answer, const Waiter& waiter);
  void continue_paused(Record record, Answer answer, std::optional<Waiter> waiter);
  // A resume (or the alarm) within the warm window: the answer goes to the live isolate.
  void resume_warm(const std::shared_ptr<Live>& live, Answer answer, std::optional<Waiter> waiter);
  // Stops the execution when the client cancels the last call waiting for it.
  void watch_cancel(const std::shared_ptr<Live>& live, const Waiter& waiter);
  static bool is_warm(const Live& live);
  // Ends the live execution's warm state and frees its warm place (CodeModeOptions::max_warm).
  void leave_warm(Live& live);
  // resume of an id this session does not own: the directory says whose it is.
  void resume_elsewhere(const std::string& id, Answer answer, const std::shared_ptr<CallContext>& call);
  void tell_directory(caf::message message, const std::string& id);
  // The paused record `id` if `token` opens it (constant-time, before its deadline), else
  // the JSON error reply for the page.
  std::variant<Record, std::string> check_approval(const std::string& id, const ApprovalCredential& credential);
  void on_tool_call(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call);
  // The built-in paths (code_builtins.hpp), storage.* over the session's c/ keys.
  void builtin(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call);
  void ask_approval(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call,
                    const mcp::ToolRegistry::Entry& entry);
  void run_tool(const std::shared_ptr<Live>& live, const engine::ToolCallEntry& call,
                const mcp::ToolRegistry::Entry& entry);
  void deliver(const std::shared_ptr<Live>& live, std::uint32_t seq, bool ok, std::string value);
  void maybe_pause(const std::shared_ptr<Live>& live);
  void pause(const std::shared_ptr<Live>& live);
  void settle(const std::shared_ptr<Live>& live, mcp::ToolResult result);
  void on_failed(const std::shared_ptr<Live>& live, engine::FailureKind kind, const std::string& message);
  void answer_waiters(Live& live, const mcp::ToolResult& result);
  void stop_live(Live& live);

  std::optional<Record> read_record(const std::string& id);
  void write_record(const Record& record, const engine::Journal* journal);
  // An execution that had paused has ended with `result`: its record, chunks, answer and
  // alarm go, the outcome is kept for a repeated resume, and the directory forgets it, in
  // one turn (one read of the record). False if it never paused (nothing stored).
  bool settle_record(const std::string& id, const mcp::ToolResult& result);
  // The stored code (into record.code) and journal.
  engine::Journal read_journal(Record& record);
  std::optional<mcp::ToolResult> read_settled(const std::string& id);
  void store_settled(const std::string& id, const mcp::ToolResult& result);
  std::optional<Answer> take_answer(const std::string& id);

  McpSession& session_;
  const CodeModeOptions& options_;
  std::map<std::string, std::shared_ptr<Live>> live_;
  // Resumes forwarded to their owner sessions, by token.
  std::map<std::uint64_t, std::shared_ptr<CallContext>> forwarded_;
  std::uint64_t forward_sequence_ = 0;
};

// A running execution (or a warm paused one) of this activation.
struct McpSession::Code::Live {
  std::string id;
  std::string code;
  std::shared_ptr<engine::Execution> exec;
  // The calls waiting for its outcome (several resumes may join).
  std::vector<Waiter> waiters;
  std::vector<std::string> emitted;
  std::vector<std::string> logs;
  std::size_t busy = 0;  // tool calls running, or waiting for an inline approval
  // Calls that need a person and have no inline way to ask: the execution pauses at the
  // first one once nothing else is running.
  std::map<std::uint32_t, engine::ToolCallEntry> awaiting;
  // The answer a resumption carries, for the call it paused at.
  std::optional<Answer> answer;
  std::uint32_t answer_seq = 0;
  // Set on the session's thread; the engine's observer reads it to drop reports of an
  // execution that already ended (a cancel's `cancelled`, say) before posting them.
  std::atomic<bool> ended{false};
  // Paused, and its isolate kept for the warm window: a resume in that window continues it
  // without a replay. Its record is stored all the same (a crash meanwhile loses nothing).
  bool warm = false;
  Lease lease;  // a session running code is never evicted
  // What the engine reported while start() was still inside Pool::start (it may poll for a
  // quick outcome there: engine::PoolOptions::start_polls_for_outcome), in order: run by
  // run_held() at the end of the turn that started it, rather than in turns of their own.
  std::vector<std::function<void(Code&, const std::shared_ptr<Live>&)>> held;

  // The first waiter whose call is still open (a client to ask, a stream to log on).
  std::shared_ptr<CallContext> caller() const {
    for (const auto& w : waiters) {
      if (w.call && !w.call->finished()) return w.call;
    }
    return nullptr;
  }
};

}  // namespace dorm::actors
