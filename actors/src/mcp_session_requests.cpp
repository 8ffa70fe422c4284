// Requests a tool sends to its client (elicitation, sampling, roots, ping) and the
// client's answers, which arrive as responses in later POSTs of the same session.
//
// A request goes out on the calling tool's stream, so it reaches the client on the
// connection that waits for the call's result (or on the client's resume of it). Its id
// is a string of the session's own, "dorm-<generation>.<activation>-<n>": JSON-RPC ids
// name requests per sender, and the epoch in it means no later activation ever issues
// the same id again, so a late answer to a request of a dead activation matches nothing
// and is dropped. Pending requests live in memory only: the tools/call that waits on
// one is in the journal, so a restart reaps that call, and the client's late answer is
// accepted (202) and dropped like any answer to a request this activation never sent.
#include "mcp_session.hpp"

#include "mcp_session_internal.hpp"

#include "dorm/mcp/modern.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm::actors {

using namespace session_internal;

namespace {

Error refuse(std::string message) { return Error{ErrorCode::invalid_argument, std::move(message)}; }

}  // namespace

Result<void> McpSession::client_accepts(std::string_view method, std::string_view params_json) const {
  auto refusal = mcp::refuse_client_request(method, params_json, meta_->client_capabilities, "in initialize");
  if (refusal) return refuse(std::move(refusal->message));
  return {};
}

Result<void> McpSession::send_client_request(Exchange& exchange, const std::string& call_key,
                                             std::string_view method, std::string_view params_json,
                                             mcp::ClientReplyHandler deliver) {
  if (!params_json.empty()) {
    rapidjson::Document params;
    params.Parse(params_json.data(), params_json.size());
    if (params.HasParseError() || !params.IsObject()) {
      return refuse("the params of a request to the client must be a JSON object");
    }
  }
  if (auto ok = client_accepts(method, params_json); !ok) return ok;
  const Epoch e = epoch();
  std::string id = "dorm-" + std::to_string(e.generation) + "." + std::to_string(e.activation) +
                   "-" + std::to_string(++outbound_sequence_);
  mcp::RequestId request_id(id);
  outbound_.emplace(request_id.to_key(), Outbound{call_key, std::move(deliver)});
  emit(exchange, mcp::request(request_id, method, params_json));
  log::debug("client_request_sent",
             {{"session", session_id_}, {"method", std::string(method)}, {"request", id}});
  after(options_.client_request_timeout, [this, key = request_id.to_key(), id] {
    auto it = outbound_.find(key);
    if (it == outbound_.end()) return;  // answered, or its call ended
    auto deliver = std::move(it->second.deliver);
    outbound_.erase(it);
    mcp::ClientReply reply;
    reply.kind = mcp::ClientReply::Kind::timeout;
    reply.message = "the client did not answer request " + id + " within " +
                    std::to_string(options_.client_request_timeout.count()) + " ms";
    deliver(reply);
  });
  return {};
}

void McpSession::take_client_reply(const Message& response) {
  auto it = response.id ? outbound_.find(response.id->to_key()) : outbound_.end();
  if (it == outbound_.end()) {
    // An answer to nothing this activation is waiting for: a request of a dead activation,
    // one already answered or timed out, or a made-up id. Accepted and dropped.
    log::info("client_reply_dropped",
              {{"session", session_id_}, {"request", response.id ? response.id->to_json() : "null"}});
    return;
  }
  auto deliver = std::move(it->second.deliver);
  outbound_.erase(it);
  mcp::ClientReply reply;
  if (response.kind == Message::Kind::result_response) {
    reply.json = response.result;
  } else {
    reply.kind = mcp::ClientReply::Kind::error;
    reply.json = response.error;
    rapidjson::Document error;
    error.Parse(response.error.c_str());
    const rapidjson::Value* message = member(error, "message");
    const rapidjson::Value* code = member(error, "code");
    reply.message = "the client answered with error " +
                    (code && code->IsInt() ? std::to_string(code->GetInt()) : std::string("?")) +
                    ": " + (message && message->IsString() ? message->GetString() : "");
  }
  deliver(reply);
}

void McpSession::drop_client_requests(const std::string& call_key) {
  std::erase_if(outbound_, [&](const auto& entry) { return entry.second.call_key == call_key; });
}

}  // namespace dorm::actors
