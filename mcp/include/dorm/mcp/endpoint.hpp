// McpEndpoint — the `/mcp` endpoint of Streamable HTTP, between HttpServer and sessions.
//
// For every request, on the HTTP thread and without waiting on anything: check the
// method and headers (request_checks.hpp: 405, 401, 403, 406, 415, 400), parse a POST
// body (400 with -32700/-32600), find the session the request names (400 when it names
// none and is not an initialize, 404 when the id cannot exist), and send one SessionCall
// to that session's durable object with the request's trace context. The object's
// HttpResponse goes back through the server's respond callback from whichever thread
// finished the turn. An initialize without a session id mints a new session id
// (128 random bits) and sends the call to a fresh object.
//
// Runtime failures become HTTP answers: a full mailbox, a runtime that is stopping or
// restarting, and a turn that failed or an object that was reset (nothing committed,
// nothing released) are 503 with Retry-After; anything else is 500 with a -32603 error.
#pragma once

#include <atomic>

#include <optional>
#include <string>

#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/modern.hpp"
#include "dorm/mcp/node_forwarder.hpp"
#include "dorm/mcp/oauth_resource.hpp"
#include "dorm/mcp/request_checks.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::mcp {

class McpEndpoint {
 public:
  struct Options {
    CheckPolicy policy;
    // With `--auth oauth`: the resource server that decides who a bearer token speaks for
    // (policy.tokens is then null). Its answer may need a key fetch: the request waits
    // parked, never an HTTP thread. Not owned; must be stopped before the endpoint dies.
    const OAuthResource* oauth = nullptr;
    // The namespace whose objects are sessions (registered by the caller).
    std::string session_namespace = "mcp-session";
    // The 2026-07-28 revision beside the 2025 ones (modern.hpp), or null: requests
    // without a session are then legacy only (a probing modern client gets the 400 that
    // sends it back to initialize). Not owned; must outlive the endpoint.
    const ModernServer* modern = nullptr;
    // The namespace of the objects that serve modern requests needing a turn (registered
    // by the caller when `modern` is set).
    std::string request_namespace = "mcp-request";
    // Scale-out: a request whose object another node serves (not_owner) is forwarded to
    // that node (node_forwarder.hpp) instead of answered 421 — unless it was forwarded
    // here already (Dorm-Forwarded-By). A node that cannot be reached is presumed dead
    // (Runtime::presume_dead) and the request is served here once its lease runs out.
    // Null: 421 with the node named. Not owned; must be stopped before the endpoint dies.
    const NodeForwarder* forwarder = nullptr;
  };

  // `runtime` must outlive the endpoint and have `options.session_namespace` registered.
  McpEndpoint(Runtime& runtime, Options options);

  // Handles one request (an HttpServer Handler). Never blocks.
  void handle(HttpRequest request, Respond respond) const;

  // The server is draining: an `initialize` is refused with 503 and `Retry-After: 1`
  // (its client connects again and reaches the successor); requests of existing
  // sessions are served as before. With a forwarder (a scale-out node), an initialize goes
  // on as before: the runtime, handing over, sends it to another node. Thread-safe.
  void set_draining() { draining_.store(true, std::memory_order_release); }

 private:
  // handle() once the caller is known: `authenticated` is the OAuth principal, or
  // nullopt for the token file or single-user mode (check_request decides).
  void serve(HttpRequest request, std::optional<Identity> authenticated, Respond respond) const;
  // Sends `call` (a SessionCall or a ModernCall) to the object `name` of namespace `ns`
  // with the request's trace context; the object answers through `respond`.
  template <class Call>
  void deliver(const std::string& ns, const std::string& name, Call call, const HttpRequest& request,
               Respond respond) const;
  // Sends `request` on to the node `owner` names (Options::forwarder); `responder`
  // answers the client.
  void forward(const OwnerInfo& owner, std::shared_ptr<const HttpRequest> request,
               std::shared_ptr<Responder> responder) const;
  // Sends `call` to its session's object; the object's answer goes to `respond`.
  void call_session(SessionCall call, const HttpRequest& request, Respond respond) const;
  // A request of the 2026-07-28 revision (modern.hpp): checked, then answered here or by
  // the request object its tools/call, prompts/get or resources/read needs.
  void serve_modern(const HttpRequest& request, RequestFacts facts,
                    std::optional<std::variant<ParsedBody, ParseFailure>> body,
                    std::optional<Identity> authenticated, Respond respond) const;
  Runtime& runtime_;
  Options options_;
  std::atomic<bool> draining_{false};
};

// The answer refusing a request to `/mcp` from its header alone (check_caller: method, a
// repeated single-valued header, token, Origin, Host), or nullopt. Made to be
// HttpServer::Options::check_head, so an unauthenticated request is refused before its
// body is read or parsed. `policy` as for McpEndpoint::Options::policy.
//
// Every mode refuses a token in the query string (`access_token`, RFC 6750 §2.3) with 400.
// With `oauth`, the Origin and Host rows come before the token, which is checked with the
// cached keys only: a token whose key is not cached yet goes on to the handler, which
// waits for the keys (McpEndpoint::Options::oauth).
std::optional<HttpResponse> refuse_caller(const HttpRequest& head, const CheckPolicy& policy,
                                          const OAuthResource* oauth = nullptr);

// The answer to a request for the Protected Resource Metadata (any path for which
// oauth.is_metadata_path): 200 with the JSON document to GET and HEAD (readable from any
// origin: it is public and browser clients read it), 405 to other methods.
HttpResponse protected_resource_metadata(const OAuthResource& oauth, const HttpRequest& request);

// The Rejection as an HTTP response.
HttpResponse to_response(const Rejection& rejection);
// A runtime failure of a session call as an HTTP response (see the header comment).
HttpResponse to_response(const caf::error& error);

}  // namespace dorm::mcp
