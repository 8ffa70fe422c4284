// Code mode's storage (the records of paused executions, their chunks, settled outcomes,
// recorded answers) and the approval page's checks: see mcp_session_code.hpp.
#include "mcp_session_code.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <span>

#include "dorm/engine/wire.hpp"
#include "dorm/mcp/execution_outcome.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;
using namespace code_detail;

// ---- records ----

std::string McpSession::Code::Record::to_json() const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("executionId");
  w.String(id.c_str());
  w.Key("state");
  w.String(state.c_str());
  w.Key("pause");
  w.StartObject();
  w.Key("seq");
  w.Uint(pause.seq);
  w.Key("path");
  w.String(pause.path.data(), static_cast<rapidjson::SizeType>(pause.path.size()));
  w.Key("args");
  w.RawValue(pause.args_json.data(), pause.args_json.size(), rapidjson::kObjectType);
  w.EndObject();
  w.Key("expiresAt");
  w.Int64(expires_at_ms);
  w.Key("ttlMs");
  w.Int64(ttl_ms);
  w.Key("chunks");
  w.Uint(chunks);
  if (!approval_token_sha256.empty()) {
    w.Key("approvalToken");
    w.String(approval_token_sha256.c_str());
  }
  w.EndObject();
  return buffer.GetString();
}

std::optional<McpSession::Code::Record> McpSession::Code::Record::from_json(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  auto str = [&](const rapidjson::Value& obj, const char* key) -> std::optional<std::string> {
    const rapidjson::Value* v = member(obj, key);
    if (!v || !v->IsString()) return std::nullopt;
    return std::string(v->GetString(), v->GetStringLength());
  };
  const rapidjson::Value* pause = member(doc, "pause");
  const rapidjson::Value* expires = member(doc, "expiresAt");
  const rapidjson::Value* ttl = member(doc, "ttlMs");
  const rapidjson::Value* chunks = member(doc, "chunks");
  if (!pause || !expires || !expires->IsInt64() || !ttl || !ttl->IsInt64() || !chunks || !chunks->IsUint()) {
    return std::nullopt;
  }
  const rapidjson::Value* seq = member(*pause, "seq");
  const rapidjson::Value* args = member(*pause, "args");
  auto id = str(doc, "executionId");
  auto state = str(doc, "state");
  auto path = str(*pause, "path");
  if (!id || !state || !path || !seq || !seq->IsUint() || !args) return std::nullopt;
  Record r;
  r.id = *id;
  r.state = *state;
  r.pause = engine::ToolCallEntry{seq->GetUint(), *path, compact(*args)};
  r.expires_at_ms = expires->GetInt64();
  r.ttl_ms = ttl->GetInt64();
  r.chunks = chunks->GetUint();
  if (auto token = str(doc, "approvalToken")) r.approval_token_sha256 = *token;
  return r;
}

std::optional<McpSession::Code::Record> McpSession::Code::read_record(const std::string& id) {
  auto stored = session_.get(session_keys::execution(id)).value_or_throw();
  if (!stored) return std::nullopt;
  auto record = Record::from_json(*stored);
  if (!record) throw ErrorException(Error{ErrorCode::corruption, "paused execution " + id + ": malformed record"});
  return record;
}

void McpSession::Code::write_record(const Record& record, const engine::Journal* journal) {
  if (journal) {
    // The old chunks go first: a journal only grows, but its chunk count is the record's.
    if (auto old = read_record(record.id)) {
      for (std::uint32_t n = 0; n < old->chunks; ++n) session_.del(session_keys::execution_journal_chunk(record.id, n)).value_or_throw();
    }
  }
  Record r = record;
  if (journal) {
    // The code (up to the engine's 1 MiB) and the journal, chunked: either may pass the
    // storage value limit alone.
    std::string bytes(4, '\0');
    const auto code_size = static_cast<std::uint32_t>(r.code.size());
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>((code_size >> (8 * i)) & 0xff);
    bytes += r.code;
    engine::wire::encode_journal(*journal, bytes);
    r.chunks = 0;
    for (std::size_t at = 0; at < bytes.size(); at += kChunkBytes) {
      session_.put(session_keys::execution_journal_chunk(r.id, r.chunks++), std::string_view(bytes).substr(at, kChunkBytes)).value_or_throw();
    }
  }
  session_.put(session_keys::execution(r.id), r.to_json()).value_or_throw();
}

engine::Journal McpSession::Code::read_journal(Record& record) {
  std::string bytes;
  for (std::uint32_t n = 0; n < record.chunks; ++n) {
    auto chunk = session_.get(session_keys::execution_journal_chunk(record.id, n)).value_or_throw();
    if (!chunk) throw ErrorException(Error{ErrorCode::corruption, "paused execution " + record.id + ": journal chunk missing"});
    bytes += *chunk;
  }
  std::uint32_t code_size = 0;
  for (int i = 0; i < 4 && static_cast<std::size_t>(i) < bytes.size(); ++i) {
    code_size |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  if (bytes.size() < 4 || bytes.size() - 4 < code_size) {
    throw ErrorException(Error{ErrorCode::corruption, "paused execution " + record.id + ": payload truncated"});
  }
  record.code = bytes.substr(4, code_size);
  auto journal = engine::wire::decode_journal(std::span<const std::uint8_t>(
      reinterpret_cast<const std::uint8_t*>(bytes.data()) + 4 + code_size, bytes.size() - 4 - code_size));
  if (!journal) throw ErrorException(Error{ErrorCode::corruption, "paused execution " + record.id + ": " + journal.error().message});
  return std::move(journal).value();
}

bool McpSession::Code::settle_record(const std::string& id, const mcp::ToolResult& result) {
  auto old = read_record(id);
  if (!old) return false;
  for (std::uint32_t n = 0; n < old->chunks; ++n) session_.del(session_keys::execution_journal_chunk(id, n)).value_or_throw();
  session_.del(session_keys::execution(id)).value_or_throw();
  session_.del(session_keys::approval_answer(id)).value_or_throw();
  session_.delete_alarm(session_keys::approval_alarm(id)).value_or_throw();
  store_settled(id, result);
  tell_directory(caf::make_message(OwnerDelete{id}), id);
  return true;
}

std::optional<mcp::ToolResult> McpSession::Code::read_settled(const std::string& id) {
  auto stored = session_.get(session_keys::settled(id)).value_or_throw();
  if (!stored) return std::nullopt;
  rapidjson::Document doc;
  doc.Parse(stored->c_str());
  const rapidjson::Value* result = doc.HasParseError() ? nullptr : member(doc, "result");
  if (!result) throw ErrorException(Error{ErrorCode::corruption, "settled execution " + id + ": malformed"});
  return mcp::ToolResult{compact(*result)};
}

void McpSession::Code::store_settled(const std::string& id, const mcp::ToolResult& result) {
  ListOptions all;
  all.prefix = std::string(session_keys::kSettled);
  auto kept = session_.list(all).value_or_throw();
  // Oldest first by the time each was stored; drop what the new one pushes out.
  std::vector<std::pair<std::int64_t, std::string>> order;
  for (const auto& kv : kept) {
    rapidjson::Document doc;
    doc.Parse(kv.value.c_str());
    const rapidjson::Value* at = doc.HasParseError() ? nullptr : member(doc, "at");
    order.emplace_back(at && at->IsInt64() ? at->GetInt64() : 0, kv.key);
  }
  std::sort(order.begin(), order.end());
  for (std::size_t i = 0; i + options_.settled_kept <= order.size() && i < order.size(); ++i) {
    session_.del(order[i].second).value_or_throw();
  }
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("at");
  w.Int64(session_.clock().now_ms());
  w.Key("result");
  w.RawValue(result.json.data(), result.json.size(), rapidjson::kObjectType);
  w.EndObject();
  auto stored = session_.put(session_keys::settled(id), buffer.GetString());
  if (!stored && is_input_error(stored.error().code)) {
    // Too large to keep: a repeated resume then finds no owner and answers execution_expired.
    log::warn("execution_outcome_not_kept", {{"session", session_.session_id_}, {"execution", id},
                                             {"error", stored.error().message}});
    return;
  }
  stored.value_or_throw();
}

std::optional<McpSession::Code::Answer> McpSession::Code::take_answer(const std::string& id) {
  const std::string key = session_keys::approval_answer(id);
  auto stored = session_.get(key).value_or_throw();
  if (!stored) return std::nullopt;
  session_.del(key).value_or_throw();
  rapidjson::Document doc;
  doc.Parse(stored->c_str());
  const rapidjson::Value* action = doc.HasParseError() ? nullptr : member(doc, "action");
  const rapidjson::Value* content = doc.HasParseError() ? nullptr : member(doc, "content");
  if (!action || !action->IsString()) return std::nullopt;
  return Answer{action->GetString(), content ? compact(*content) : "{}"};
}

std::variant<McpSession::Code::Record, std::string> McpSession::Code::check_approval(
    const std::string& id, const ApprovalCredential& credential) {
  auto record = read_record(id);
  if (!record || record->state != "paused") {
    return page_reply(404, "This execution is not waiting for an approval (it finished, or is running).");
  }
  if (credential.bearer) {
    // The page authenticated the bearer token; only the execution's owner may answer.
    if (!session_.meta_ || !(*credential.bearer == session_.meta_->owner)) {
      log::warn("approval_bearer_refused", {{"session", session_.session_id_}, {"execution", id},
                                           {"user", credential.bearer->user}});
      return page_reply(403, "This execution belongs to another user.");
    }
  } else {
    const std::string presented = sha256_hex(credential.token);
    const std::string& expected = record->approval_token_sha256;
    if (expected.size() != presented.size() ||
        CRYPTO_memcmp(expected.data(), presented.data(), expected.size()) != 0) {
      log::warn("approval_token_refused", {{"session", session_.session_id_}, {"execution", id}});
      return page_reply(403, "This approval link is not valid (wrong or already used).");
    }
  }
  if (session_.clock().now_ms() >= record->expires_at_ms) {
    return page_reply(403, credential.bearer ? "This execution's approval window has passed."
                                             : "This approval link has expired.");
  }
  return std::move(*record);
}

std::string McpSession::Code::approval_view(const ApprovalView& request) {
  auto checked = check_approval(request.execution_id, request.credential);
  if (auto* error = std::get_if<std::string>(&checked)) return *error;
  const Record& record = std::get<Record>(checked);
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("tool");
  w.String(record.pause.path.c_str());
  w.Key("args");
  w.String(record.pause.args_json.c_str());
  w.Key("expiresAt");
  std::string at = mcp::iso8601_utc(record.expires_at_ms);
  w.String(at.c_str());
  w.EndObject();
  return buffer.GetString();
}

std::string McpSession::Code::approval_decide(const ApprovalDecision& request) {
  auto checked = check_approval(request.execution_id, request.credential);
  if (auto* error = std::get_if<std::string>(&checked)) return *error;
  Record record = std::move(std::get<Record>(checked));
  // Single use: the link is spent whatever happens next.
  record.approval_token_sha256.clear();
  write_record(record, nullptr);
  log::info("execution_approval_answered",
            {{"session", session_.session_id_}, {"execution", record.id}, {"action", request.action},
             {"via", request.credential.bearer ? "page_bearer" : "page"}});
  Answer answer{request.action, "{}"};
  if (auto it = live_.find(record.id); it != live_.end() && it->second->warm) {
    resume_warm(it->second, std::move(answer), std::nullopt);
  } else {
    continue_paused(std::move(record), std::move(answer), std::nullopt);
  }
  return std::string(R"({"decided":")") + (request.action == "accept" ? "accept" : "decline") + "\"}";
}

}  // namespace dorm::actors
