#include "dorm/mcp/endpoint.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/parse_query.hpp>
#include <rapidjson/document.h>

#include <memory>
#include <variant>

#include "dorm/mcp/session_id.hpp"
#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/runtime/tracing.hpp"

namespace dorm::mcp {
namespace {

HttpResponse json_error(int status, int code, std::string_view message) {
  return HttpResponse{status,
                      {{"Content-Type", "application/json"}},
                      error_response(std::nullopt, code, message)};
}

// The facts check_request reads, as views into `request` (which must outlive them).
RequestFacts facts_of(const HttpRequest& request) {
  RequestFacts facts;
  facts.method = request.method;
  facts.accept = request.header("accept");
  facts.content_type = request.header("content-type");
  facts.origin = request.header("origin");
  facts.host = request.header("host");
  facts.protocol_version = request.header("mcp-protocol-version");
  facts.authorization = request.header("authorization");
  facts.session_id = request.header("mcp-session-id");
  for (std::string_view name : kSingleValuedHeaders) {
    if (request.header_lines(name) > 1) {
      facts.repeated_header = name;
      break;
    }
  }
  return facts;
}

// The target's query has an `access_token` parameter (RFC 6750 §2.3), which no mode reads:
// a URL ends up in logs, proxies and browser history.
bool token_in_query(std::string_view target) {
  auto query_at = target.find('?');
  if (query_at == std::string_view::npos) return false;
  auto params = boost::urls::parse_query(target.substr(query_at + 1));
  if (!params) return false;
  for (auto param : *params) {
    if (param.key.decode() == "access_token") return true;
  }
  return false;
}

HttpResponse refuse_token_in_query() {
  auto res = json_error(400, kTransportError,
                        "Bad Request: a token in the URL is refused; send Authorization: Bearer <token>");
  res.headers.emplace_back("WWW-Authenticate", R"(Bearer error="invalid_request")");
  return res;
}

// The bearer token of a request for OAuth: nullopt when there is no Authorization header;
// an empty token (refused as malformed) when the header is not one in the Bearer scheme.
std::optional<std::string_view> oauth_token(const HttpRequest& request) {
  auto authorization = request.header("authorization");
  if (!authorization) return std::nullopt;
  return bearer_token(*authorization).value_or(std::string_view());
}

}  // namespace

std::optional<HttpResponse> refuse_caller(const HttpRequest& head, const CheckPolicy& policy,
                                          const OAuthResource* oauth) {
  if (token_in_query(head.target)) return refuse_token_in_query();
  auto checked = check_caller(facts_of(head), policy);
  if (auto* rejection = std::get_if<Rejection>(&checked)) return to_response(*rejection);
  if (oauth != nullptr) {
    auto verdict = oauth->authenticate_cached(oauth_token(head));
    if (verdict) {
      if (auto* rejection = std::get_if<Rejection>(&*verdict)) return to_response(*rejection);
    }
  }
  return std::nullopt;
}

HttpResponse protected_resource_metadata(const OAuthResource& oauth, const HttpRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    return HttpResponse{405, {{"Allow", "GET, HEAD"}, {"Content-Type", "text/plain; charset=utf-8"}},
                        "method not allowed\n"};
  }
  return HttpResponse{200,
                      {{"Content-Type", "application/json"},
                       {"Access-Control-Allow-Origin", "*"},
                       {"Cache-Control", "max-age=300"}},
                      oauth.metadata_json()};
}

HttpResponse to_response(const Rejection& rejection) {
  return HttpResponse{rejection.http_status, rejection.headers, rejection.body};
}

HttpResponse to_response(const caf::error& error) {
  // A turn whose commit the store refused for space kept nothing and released nothing.
  if (is(error, RuntimeErrc::no_space)) return to_response(Rejection::storage_full());
  // Scale-out: another node serves this session, and this one does not forward to it (no
  // forwarder, or the request was forwarded here already). 421 Misdirected Request: the
  // request may be sent again to the node named.
  if (auto owner = owner_of(error)) {
    auto res = json_error(421, kTransportError,
                          "this session is served by node " + owner->node +
                              (owner->address.empty() ? std::string()
                                                      : " at " + owner->address) +
                              "; send the request there");
    res.headers.emplace_back("Dorm-Node", owner->node);
    return res;
  }
  // A failed or reset turn committed nothing and released nothing: sending the request
  // again is safe, so it is "unavailable, retry", like a full mailbox or a restart.
  if (is(error, RuntimeErrc::overloaded) || is(error, RuntimeErrc::stopped) ||
      is(error, RuntimeErrc::node_restarting) || is(error, RuntimeErrc::object_reset) ||
      is(error, RuntimeErrc::turn_failed)) {
    auto res = json_error(503, kTransportError, "the server is busy or restarting: " + describe(error));
    res.headers.emplace_back("Retry-After", "1");
    return res;
  }
  return json_error(500, kInternalError, "internal error: " + describe(error));
}

McpEndpoint::McpEndpoint(Runtime& runtime, Options options)
    : runtime_(runtime), options_(std::move(options)) {}

void McpEndpoint::handle(HttpRequest request, Respond respond) const {
  if (token_in_query(request.target)) return respond(refuse_token_in_query());
  if (options_.oauth == nullptr) return serve(std::move(request), std::nullopt, std::move(respond));
  // The rows of check_caller that need no token first (policy.tokens is null), then the
  // token, whose check may wait for the authorization server's keys.
  auto checked = check_caller(facts_of(request), options_.policy);
  if (auto* rejection = std::get_if<Rejection>(&checked)) return respond(to_response(*rejection));
  auto held = std::make_shared<HttpRequest>(std::move(request));
  auto token = oauth_token(*held);
  options_.oauth->authenticate(token, [this, held, respond = std::move(respond)](AuthVerdict verdict) mutable {
    if (auto* rejection = std::get_if<Rejection>(&verdict)) return respond(to_response(*rejection));
    serve(std::move(*held), std::get<Identity>(std::move(verdict)), std::move(respond));
  });
}

void McpEndpoint::serve(HttpRequest request, std::optional<Identity> authenticated,
                        Respond respond) const {
  // check_request repeats refuse_caller's checks (HttpServer ran them before the body):
  // the handler stays safe when given a request no head check has seen.
  RequestFacts facts = facts_of(request);
  std::optional<std::variant<ParsedBody, ParseFailure>> body;
  if (request.method == "POST") {
    body = parse_body(request.body);
    if (auto* parsed = std::get_if<ParsedBody>(&*body)) {
      facts.initialize = !parsed->batch && parsed->messages.size() == 1 &&
                         parsed->messages[0].kind == Message::Kind::request &&
                         parsed->messages[0].method == "initialize";
    }
  }
  if (options_.modern && !facts.session_id) {
    const ParsedBody* parsed = body ? std::get_if<ParsedBody>(&*body) : nullptr;
    if (is_modern(facts.protocol_version, parsed)) {
      return serve_modern(request, facts, std::move(body), std::move(authenticated), std::move(respond));
    }
  }
  auto checked = check_request(facts, options_.policy);
  if (auto* rejection = std::get_if<Rejection>(&checked)) return respond(to_response(*rejection));

  SessionCall call;
  call.caller = authenticated ? std::move(*authenticated) : std::get<Identity>(std::move(checked));
  if (facts.protocol_version) call.protocol_version = std::string(*facts.protocol_version);
  if (request.method == "POST") {
    if (auto* failure = std::get_if<ParseFailure>(&*body)) {
      return respond(to_response(Rejection::invalid_body(*failure)));
    }
    auto& parsed = std::get<ParsedBody>(*body);
    call.messages = std::move(parsed.messages);
    call.batch = parsed.batch;
    if (!facts.session_id) {
      // Only initialize may come without a session: anything else (a stateless client's
      // server/discover probe, a stray notification) gets an ordinary 400.
      if (!facts.initialize) return respond(to_response(Rejection::pre_initialize()));
      // A scale-out node hands new sessions to another node instead (Runtime::hand_over).
      if (draining_.load(std::memory_order_acquire) && !options_.forwarder) {
        auto refusal = json_error(503, kTransportError,
                                  "this server is shutting down and takes no new sessions; "
                                  "connect again");
        refusal.headers.emplace_back("Retry-After", "1");
        return respond(std::move(refusal));
      }
      auto minted = new_session_id();
      if (!minted) return respond(json_error(500, kInternalError, minted.error().message));
      call.kind = SessionCall::Kind::initialize;
      call.session_id = std::move(*minted);
      return call_session(std::move(call), request, std::move(respond));
    }
    call.kind = SessionCall::Kind::post;
  } else {
    if (!facts.session_id) return respond(to_response(Rejection::missing_session()));
    call.kind = request.method == "GET" ? SessionCall::Kind::get : SessionCall::Kind::remove;
    if (auto cursor = request.header("last-event-id")) call.last_event_id = std::string(*cursor);
  }
  call.session_id = std::string(*facts.session_id);
  call_session(std::move(call), request, std::move(respond));
}

void McpEndpoint::serve_modern(const HttpRequest& request, RequestFacts facts,
                               std::optional<std::variant<ParsedBody, ParseFailure>> body,
                               std::optional<Identity> authenticated, Respond respond) const {
  // Who is calling and from where first, as for every request.
  auto caller = check_caller(facts, options_.policy);
  if (auto* rejection = std::get_if<Rejection>(&caller)) return respond(to_response(*rejection));
  if (request.method != "POST") {
    // The revision has no GET stream and no session to DELETE.
    return respond(HttpResponse{405,
                                {{"Allow", "POST"}, {"Content-Type", "application/json"}},
                                error_response(std::nullopt, kTransportError,
                                               "MCP 2026-07-28 takes POST only: it has no GET stream "
                                               "and no session to delete")});
  }
  // Accept and Content-Type; the revision's own checks below read MCP-Protocol-Version.
  RequestFacts media = facts;
  media.protocol_version.reset();
  auto checked = check_request(media, options_.policy);
  if (auto* rejection = std::get_if<Rejection>(&checked)) return respond(to_response(*rejection));
  if (auto* failure = std::get_if<ParseFailure>(&*body)) {
    return respond(to_response(Rejection::invalid_body(*failure)));
  }
  ModernHeaders headers{request.header("mcp-protocol-version"), request.header("mcp-method"),
                        request.header("mcp-name")};
  auto modern = check_modern(headers, std::get<ParsedBody>(std::move(*body)));
  if (auto* rejection = std::get_if<Rejection>(&modern)) return respond(to_response(*rejection));
  auto& req = std::get<ModernRequest>(modern);
  if (req.message.kind == Message::Kind::notification) return respond(HttpResponse{202, {}, {}});
  auto header = [&request](std::string_view name) { return request.header(name); };
  if (auto bad = check_param_headers(req, options_.modern->tools, header)) return respond(to_response(*bad));
  if (req.message.method == "subscriptions/listen" && options_.modern->listen) {
    auto filter = listen_filter(req, *options_.modern);
    if (auto* refusal = std::get_if<ModernAnswer>(&filter)) {
      return respond(HttpResponse{refusal->http_status, {{"Content-Type", "application/json"}}, std::move(refusal->body)});
    }
    // The acknowledgement is in the body before the head goes out: both leave in one write.
    auto body = std::make_shared<StreamBody>();
    auto& honoured = std::get<ListenFilter>(filter);
    honoured.owner = authenticated ? *authenticated : std::get<Identity>(caller);
    options_.modern->listen->add(body, *req.message.id, std::move(honoured));
    HttpResponse head(200, {{"Content-Type", kEventStream}, {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
    head.stream = std::move(body);
    return respond(std::move(head));
  }
  if (auto answer = answer_stateless(req, *options_.modern)) {
    return respond(HttpResponse{answer->http_status, {{"Content-Type", "application/json"}},
                                std::move(answer->body)});
  }
  ModernCall call;
  call.caller = authenticated ? std::move(*authenticated) : std::get<Identity>(std::move(caller));
  // A request sent again with a requestState goes to the object that issued it; one that
  // is not of our format names no object (a tampered or made-up state).
  std::optional<std::string> state_text;
  {
    rapidjson::Document params;
    params.Parse(req.message.params.empty() ? "{}" : req.message.params.c_str());
    if (params.IsObject() && params.HasMember("requestState")) {
      const auto& state = params["requestState"];
      if (!state.IsString()) {
        return respond(to_response(modern_error(400, req.message.id, kInvalidParams,
                                                "params.requestState must be a string")));
      }
      state_text = std::string(state.GetString(), state.GetStringLength());
    }
  }
  const std::string& method = req.message.method;
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    // A task is the request object its tools/call became: its id is that object's name.
    rapidjson::Document params;
    params.Parse(req.message.params.c_str());
    const rapidjson::Value* task = params.IsObject() && params.HasMember("taskId") ? &params["taskId"] : nullptr;
    std::string_view task_id = task && task->IsString() ? std::string_view(task->GetString(), task->GetStringLength())
                                                        : std::string_view();
    bool ours = task_id.size() == 32 && task_id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
    if (!ours) {
      return respond(to_response(modern_error(200, req.message.id, kInvalidParams,
                                              "unknown task: params.taskId names no task of this server")));
    }
    call.handle = std::string(task_id);
  } else if (state_text) {
    // Opened here, on the HTTP thread: a tampered or foreign state reaches no object.
    auto state = open_request_state(*state_text, call.caller, runtime_.derive_key(kRequestStateKeyPurpose));
    if (!state) {
      return respond(to_response(modern_error(400, req.message.id, kInvalidParams,
                                              "params.requestState is not one this server issued",
                                              {}, "request_state_invalid")));
    }
    call.handle = std::move(state->handle);
    call.round = state->round;
    call.resumed = true;
  } else {
    auto minted = new_session_id();
    if (!minted) return respond(json_error(500, kInternalError, minted.error().message));
    call.handle = std::move(*minted);
  }
  call.request = std::move(req);
  std::string name = call.handle;
  deliver(options_.request_namespace, name, std::move(call), request, std::move(respond));
}

void McpEndpoint::call_session(SessionCall call, const HttpRequest& request,
                               Respond respond) const {
  // A session id names its object through the runtime's keyed hash: an id the server
  // never minted names an object with no stored metadata, which answers 404.
  std::string name = call.session_id;
  deliver(options_.session_namespace, name, std::move(call), request, std::move(respond));
}

template <class Call>
void McpEndpoint::deliver(const std::string& ns, const std::string& name, Call call, const HttpRequest& request,
                          Respond respond) const {
  std::optional<trace::TraceContext> trace;
  if (auto header = request.header("traceparent")) trace = trace::TraceContext::from_traceparent(*header);
  auto handle = runtime_.get(runtime_.id_from_name(ns, name));
  if (!handle) return respond(json_error(500, kInternalError, handle.error().message));
  auto responder = std::make_shared<Responder>(std::move(respond));
  call.responder = responder;
  // Scale-out: kept until the object answers, to send on if another node serves it.
  std::shared_ptr<const HttpRequest> held;
  if (options_.forwarder && !request.header(kForwardedByHeader)) held = std::make_shared<HttpRequest>(request);
  // The object answers through the responder; the runtime's reply only matters when the
  // runtime refused the message (full mailbox, stopping, held by another node).
  runtime_.deliver(
      *handle, caf::make_message(std::move(call)),
      [this, responder, held = std::move(held)](caf::expected<caf::message> reply) mutable {
        if (reply) return;
        if (held) {
          if (auto owner = owner_of(reply.error()); owner && !owner->address.empty()) {
            return forward(*owner, std::move(held), std::move(responder));
          }
        }
        responder->respond(to_response(reply.error()));
      },
      trace);
}

void McpEndpoint::forward(const OwnerInfo& owner, std::shared_ptr<const HttpRequest> request,
                          std::shared_ptr<Responder> responder) const {
  auto answer = [responder](HttpResponse res) { responder->respond(std::move(res)); };
  auto unreachable = [this, node = owner.node, request, answer](std::string why) {
    // Nothing reached that node, so nothing of the request happened there. A node that
    // cannot be reached is presumed dead: the request is served here, by an activation
    // that waits for that node's lease to run out (or refuses, if the node renews it after
    // all: the request is then not forwarded again, and its client gets the 421).
    log::info("forward_unreachable", {{"node", node}, {"error", why}});
    runtime_.presume_dead(node);
    HttpRequest again = *request;
    again.headers.push_back({std::string(kForwardedByHeader), options_.forwarder->node_id(), 1});
    handle(std::move(again), answer);
  };
  options_.forwarder->forward(*request, owner.address, answer, std::move(unreachable));
}

Responder::~Responder() {
  if (!answered_.exchange(true)) {
    respond_(json_error(503, kTransportError,
                        "the session stopped before answering; send the request again"));
  }
}

void Responder::respond(HttpResponse response) {
  if (answered_.exchange(true)) return;
  respond_(std::move(response));
}

}  // namespace dorm::mcp
