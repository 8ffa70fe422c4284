// McpCluster, the client side: sessions opened and tool calls made the way the official
// TypeScript SDK client makes them, and the streams of each call followed by its
// reconnect rules (sdk_reconnect.hpp) on the virtual clock.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <stdexcept>

#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/testing/sse_decoder.hpp"
#include "mcp_cluster_impl.hpp"

namespace dorm::testing {
namespace {

std::vector<mcp::Message> parse_messages(const std::string& body) {
  auto parsed = mcp::parse_body(body);
  if (auto* failure = std::get_if<mcp::ParseFailure>(&parsed)) {
    throw std::invalid_argument("not a JSON-RPC message (" + failure->message + "): " + body);
  }
  return std::get<mcp::ParsedBody>(std::move(parsed)).messages;
}

std::string tools_call_params(std::string_view tool, std::string_view arguments) {
  rapidjson::Document check;
  check.Parse(arguments.data(), arguments.size());
  if (check.HasParseError() || !check.IsObject()) {
    throw std::invalid_argument("tool arguments must be a JSON object: " + std::string(arguments));
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("name");
  w.String(tool.data(), static_cast<rapidjson::SizeType>(tool.size()));
  w.Key("arguments");
  w.RawValue(arguments.data(), arguments.size(), rapidjson::kObjectType);
  w.EndObject();
  return buffer.GetString();
}

bool is_event_stream(const mcp::HttpResponse& r) {
  for (const auto& [name, value] : r.headers) {
    if (name == "Content-Type") return value.starts_with(mcp::kEventStream);
  }
  return false;
}

// One call's stream as the SDK's _handleSseStream reads it: the id it may resume from and
// whether it may.
struct StreamRead {
  bool reconnectable = false;  // a GET (resume) stream; a POST stream is not
  std::optional<std::string> last_event_id;
  bool received_result = false;
  SseDecoder decoder;
};

// Follows one call from its POST to the end of the SDK's reconnect attempts.
class CallFollower : public std::enable_shared_from_this<CallFollower> {
 public:
  CallFollower(McpCluster::Impl& impl, std::size_t client, std::size_t call)
      : impl_(impl), client_(client), call_(call) {}

  void post(mcp::SessionCall c) {
    auto self = shared_from_this();
    bool sent = impl_.send(node(), std::move(c), [self](mcp::HttpResponse r) {
      if (r.status < 200 || r.status > 299) {
        return self->fail_post("http_" + std::to_string(r.status));
      }
      self->read_response(std::move(r), false);
    });
    if (!sent) fail_post("connection_refused");
  }

 private:
  std::size_t node() const { return impl_.clients[client_].node; }
  std::int64_t request_id() const { return impl_.calls[call_].request_id; }

  // The SDK rejects the call at once: no stream to wait on.
  void fail_post(std::string reason) { impl_.settle(call_, Outcome{OutcomeKind::failed, 0, std::move(reason)}); }

  void read_response(mcp::HttpResponse r, bool reconnectable) {
    auto s = std::make_shared<StreamRead>();
    s->reconnectable = reconnectable;
    if (!r.stream) {
      if (is_event_stream(r)) {
        on_bytes(*s, r.body);
        ended(*s);
      } else if (!r.body.empty()) {
        deliver(*s, r.body);  // a JSON answer
      }
      return;
    }
    auto c = std::make_shared<Connection>();
    c->node = node();
    c->body = r.stream;
    auto self = shared_from_this();
    c->on_bytes = [self, s](std::string_view bytes) { self->on_bytes(*s, bytes); };
    c->on_end = [self, s](bool) { self->ended(*s); };  // clean or not: the SDK treats both alike
    impl_.open(c);
  }

  void on_bytes(StreamRead& s, std::string_view bytes) {
    auto chunk = s.decoder.feed(bytes);
    if (chunk.retry_ms) impl_.clients[client_].server_retry_ms = chunk.retry_ms;
    for (auto& event : chunk.events) {
      // An empty id is no id: the SDK tests it for truth.
      if (event.id && !event.id->empty()) s.last_event_id = event.id;
      if (event.data.empty() || !(event.event.empty() || event.event == "message")) continue;
      deliver(s, event.data);
    }
  }

  // A message for the client: the call's response settles it.
  void deliver(StreamRead& s, const std::string& json) {
    auto parsed = mcp::parse_body(json);
    auto* ok = std::get_if<mcp::ParsedBody>(&parsed);
    if (!ok) return;  // the SDK reports it to onerror and reads on
    for (const auto& m : ok->messages) {
      if (!m.is_response() || !m.id || *m.id != mcp::RequestId(request_id())) continue;
      if (m.kind == mcp::Message::Kind::result_response) {
        s.received_result = true;
        impl_.settle(call_, Outcome{OutcomeKind::answered, 0, {}});
      } else {
        impl_.settle(call_, outcome_of_error(m.error));
      }
    }
  }

  void ended(const StreamRead& s) {
    if (!resumes_after_end(s.reconnectable, s.last_event_id.has_value(), s.received_result)) return;
    schedule(s.last_event_id, 0);
  }

  void schedule(std::optional<std::string> cursor, int attempt) {
    const auto& reconnect = impl_.options.client.reconnect;
    if (attempt >= reconnect.max_retries) return;  // the SDK gives up: the call waits for its timeout
    auto delay = reconnect_delay_ms(reconnect, attempt, impl_.clients[client_].server_retry_ms);
    auto at = impl_.now() + delay;
    // Nothing that comes after the call's timeout changes its outcome: stop there, as
    // deploy-sim's client of real processes does, rather than resume a hung call's GET
    // stream every `retry:` for as long as the cluster runs.
    if (at >= impl_.calls[call_].start_ms + impl_.options.client.request_timeout_ms) return;
    auto self = shared_from_this();
    impl_.at(at, [self, cursor, attempt] { self->resume(cursor, attempt); });
  }

  void resume(const std::optional<std::string>& cursor, int attempt) {
    const auto& client = impl_.clients[client_];
    mcp::SessionCall c;
    c.kind = mcp::SessionCall::Kind::get;
    c.session_id = client.session_id;
    c.caller = impl_.options.client.identity;
    c.protocol_version = impl_.options.client.protocol_version;
    c.last_event_id = cursor;
    auto self = shared_from_this();
    bool sent = impl_.send(node(), std::move(c), [self, cursor, attempt](mcp::HttpResponse r) {
      bool has_body = r.stream || !r.body.empty();
      switch (classify_resume(r.status, has_body)) {
        case ResumeAnswer::stream:
          return self->read_response(std::move(r), true);
        case ResumeAnswer::finished:
        case ResumeAnswer::abandoned:
          return;
        case ResumeAnswer::failed:
          return self->schedule(cursor, attempt + 1);
      }
    });
    if (!sent) schedule(cursor, attempt + 1);
  }

  McpCluster::Impl& impl_;
  std::size_t client_;
  std::size_t call_;
};

}  // namespace

void McpCluster::Impl::settle(std::size_t call, Outcome outcome) {
  auto& record = calls[call];
  if (record.outcome.kind != OutcomeKind::pending) return;  // the first outcome stands
  record.outcome = std::move(outcome);
  record.end_ms = now();
}

Result<std::size_t> McpCluster::Impl::open_session(std::string session_id) {
  auto id = cluster->id_from_name(actors::kMcpSessionNamespace, session_id);
  ClientState client{session_id, cluster->shard_of(id), 1, std::nullopt};
  const auto& o = options.client;
  std::optional<mcp::HttpResponse> answer;
  auto ask = [&](mcp::SessionCall::Kind kind, const std::string& body) {
    mcp::SessionCall c;
    c.kind = kind;
    c.session_id = session_id;
    c.caller = o.identity;
    if (kind != mcp::SessionCall::Kind::initialize) c.protocol_version = o.protocol_version;
    c.messages = parse_messages(body);
    answer.reset();
    bool sent = send(client.node, std::move(c), [&answer](mcp::HttpResponse r) { answer = std::move(r); });
    run_until_idle();
    if (!sent) return Result<void>(Error{ErrorCode::unavailable, "node of session " + session_id + " is down"});
    if (!answer || answer->status / 100 != 2) {
      return Result<void>(Error{ErrorCode::unavailable,
                                "session " + session_id + " answered " +
                                    (answer ? std::to_string(answer->status) + ": " + answer->body : "nothing")});
    }
    return Result<void>();
  };
  std::string params = R"({"protocolVersion":")" + o.protocol_version +
                       R"(","capabilities":{},"clientInfo":{"name":"dorm-testing","version":"1"}})";
  if (auto ok = ask(mcp::SessionCall::Kind::initialize,
                    mcp::request(mcp::RequestId(std::int64_t{0}), "initialize", params));
      !ok) {
    return std::move(ok).error();
  }
  if (auto ok = ask(mcp::SessionCall::Kind::post, mcp::notification("notifications/initialized")); !ok) {
    return std::move(ok).error();
  }
  clients.push_back(std::move(client));
  return clients.size() - 1;
}

std::size_t McpCluster::Impl::start_call(std::size_t client, std::string_view tool, std::string_view arguments) {
  auto& state = clients[client];
  CallRecord record;
  record.session = state.session_id;
  record.node = state.node;
  record.request_id = state.next_request_id++;
  record.tool = std::string(tool);
  record.start_ms = now();
  mcp::SessionCall c;
  c.kind = mcp::SessionCall::Kind::post;
  c.session_id = state.session_id;
  c.caller = options.client.identity;
  c.protocol_version = options.client.protocol_version;
  c.messages = parse_messages(
      mcp::request(mcp::RequestId(record.request_id), "tools/call", tools_call_params(tool, arguments)));
  calls.push_back(std::move(record));
  std::size_t call = calls.size() - 1;
  at(now() + options.client.request_timeout_ms, [this, call] {
    settle(call, Outcome{OutcomeKind::hung, 0, {}});
  });
  std::make_shared<CallFollower>(*this, client, call)->post(std::move(c));
  return call;
}

}  // namespace dorm::testing
