// The 2026-07-28 revision of MCP ("modern" era) on dorm's one `/mcp` endpoint, beside the
// 2025 revisions ("legacy" era, sessions).
//
// A modern request carries everything the server needs to answer it: its revision and the
// client's capabilities travel in `params._meta` of every request, there is no
// `initialize`, no session id and no GET stream. This file holds the parts that need no
// runtime: telling the eras apart, checking a modern POST (its `_meta`, its revision and
// the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, in the order the revision's
// errors need), the answers of the methods that need no state (`server/discover` and the
// lists), and the result envelope every modern result gets (`resultType`, the caching
// hints, the server's identity in `_meta`).
//
// Which era a request belongs to (docs/mcp.md, "Two eras on one endpoint"): a request
// naming a session (MCP-Session-Id) is legacy. A POST without one is modern when its
// MCP-Protocol-Version header names a revision that is not a legacy one, or, without the
// header, when its request carries `params._meta["io.modelcontextprotocol/protocolVersion"]`.
// Anything else without a session is legacy (`initialize`, or the 400 that sends a probing
// client back to `initialize`).
//
// Checks, in order, each answering 400 with the request's id echoed:
//   -32600  a batch, or a response (the modern era has neither)
//   -32602  params._meta missing, or its protocolVersion (a string) or clientCapabilities
//           (an object) missing; a clientInfo that is not an object; a logLevel that is
//           not an MCP log level
//   -32020  MCP-Protocol-Version missing, or not equal to _meta's protocolVersion
//   -32022  the revision is not one dorm speaks (data: supported, requested)
//   -32020  Mcp-Method missing or not the body's method; Mcp-Name missing or not the
//           body's params.name (tools/call, prompts/get), params.uri (resources/read) or
//           params.taskId (tasks/get, tasks/update, tasks/cancel)
// Header values are compared after trimming spaces and tabs (RFC 9110 §5.5); a value of
// the form `=?base64?…?=` is decoded first, and one holding a control character is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/listen_hub.hpp"
#include "dorm/mcp/request_checks.hpp"

namespace dorm::mcp {

class ToolRegistry;
class ResourceRegistry;
class PromptRegistry;
class ListenHub;

inline constexpr std::string_view kModernProtocolVersion = "2026-07-28";
// The most task ids one subscriptions/listen may ask for: a bound on what one stream makes
// every task change look through.
inline constexpr std::size_t kMaxListenTaskIds = 1000;

// The error codes the modern era adds (MCP 2026-07-28, "Error Codes").
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

// The reserved `_meta` keys of the modern era.
inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr const char* kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
// The Tasks extension's identifier (capabilities.extensions on both sides).
inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";

// The headers check_modern reads, nullopt when absent (several lines joined with ", ").
struct ModernHeaders {
  std::optional<std::string_view> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string_view> method;            // Mcp-Method
  std::optional<std::string_view> name;              // Mcp-Name
};

// True when a request without a session belongs to the modern era (see the top of the
// file). `body` is null for a GET or DELETE, or for a POST whose body did not parse.
bool is_modern(std::optional<std::string_view> protocol_header, const ParsedBody* body);

// A modern request that passed check_modern.
struct ModernRequest {
  Message message;  // a request (kind request) or a notification
  std::string protocol_version;
  std::string client_capabilities;  // a JSON object, compact
  std::string client_info;          // a JSON object, compact; empty when not sent
  std::string log_level;            // empty: the client asked for no log messages
  // params._meta.progressToken as compact JSON, empty when none was sent.
  std::string progress_token;
};

// Checks a modern POST (the order at the top of this file). A notification passes too
// (with nothing to check but its envelope).
std::variant<ModernRequest, Rejection> check_modern(const ModernHeaders& headers, ParsedBody body);

// For a tools/call: each argument whose input-schema property carries `x-mcp-header: NAME`
// (reached through `properties` alone; a string, integer or boolean) must come with the
// header `Mcp-Param-NAME` holding the same value (decoded as decode_header_value does;
// integers compared as numbers), unless the argument is absent or null. The answer is
// 400/-32020 when one is missing, malformed or different; nullopt when all agree, and
// for any other method or a tool not registered (the call answers that itself).
// `header(name)` returns a request header by its lower-case name.
std::optional<Rejection> check_param_headers(
    const ModernRequest& request, const ToolRegistry* tools,
    const std::function<std::optional<std::string_view>(std::string_view)>& header);

// A header value as the client meant it: OWS trimmed, `=?base64?…?=` decoded; nullopt when
// the sentinel's base64 or the decoded text is malformed, or the value holds a control
// character.
std::optional<std::string> decode_header_value(std::string_view raw);

// Whether the client declared `capability` (a top-level member of ClientCapabilities,
// e.g. "elicitation", "sampling", "roots") in `client_capabilities_json`.
bool declares_capability(std::string_view client_capabilities_json, std::string_view capability);

// Why a tool may not send its client `method` (elicitation/create, sampling/createMessage,
// roots/list, ping) with `params_json`, given the ClientCapabilities the client declared
// (`client_capabilities_json`; `where` says where it declared them, for the message):
// nullopt when it may. Both eras ask this before a tool's request goes out.
struct ClientRequestRefusal {
  std::string capability;  // the capability missing; empty when the method is not one a tool may send
  std::string message;
};
std::optional<ClientRequestRefusal> refuse_client_request(std::string_view method,
                                                          std::string_view params_json,
                                                          std::string_view client_capabilities_json,
                                                          std::string_view where);

// Whether the client declared `extension` in `client_capabilities_json`'s `extensions`.
bool declares_extension(std::string_view client_capabilities_json, std::string_view extension);

// The -32021 error (HTTP 400) for a request without the Tasks extension that needs it.
Rejection tasks_extension_required(const std::optional<RequestId>& id, std::string_view why);

// An error response for a modern request, ready to send: the JSON-RPC error with the
// request's id and the HTTP status the revision gives it (400 for -32020..-32022 and
// -32602 on `_meta`; 404 for -32601; 200 otherwise, the error being the request's answer).
Rejection modern_error(int http_status, const std::optional<RequestId>& id, int code,
                       std::string_view message, std::string_view data_json = {},
                       std::string_view reason = "modern_error");

// What every modern answer of this server says about it.
struct ModernServer {
  std::string name = "dorm";
  std::string version;
  const ToolRegistry* tools = nullptr;
  const ResourceRegistry* resources = nullptr;
  const PromptRegistry* prompts = nullptr;
  std::size_t page_size = 100;
  // Where subscriptions/listen streams are kept (null: the method is not offered, and
  // discover announces no listChanged or subscribe). Not owned.
  ListenHub* listen = nullptr;
  // ttlMs of the cacheable lists and of server/discover: how long a client may reuse them.
  // The registries are fixed while the server runs, so only a redeploy changes them.
  std::int64_t list_ttl_ms = 60'000;
};

// Caching hints (MCP 2026-07-28, "Caching"): on complete results of server/discover, the
// lists and resources/read.
struct CacheHints {
  std::int64_t ttl_ms = 0;
  bool is_public = false;  // cacheScope "public", else "private"
};

// `result_json` (a JSON object) with the modern envelope added: `resultType`, the caching
// hints when given, and `_meta["io.modelcontextprotocol/serverInfo"]` (merged into any
// `_meta` the result has). A result_json that is not an object is returned unchanged.
std::string modern_result(std::string_view result_json, const ModernServer& server,
                          std::string_view result_type = "complete",
                          std::optional<CacheHints> cache = std::nullopt);

// server/discover's result, enveloped.
std::string discover_result(const ModernServer& server);

// The answer to a modern request that needs no state: server/discover, tools/list,
// prompts/list, resources/list, resources/templates/list, completion/complete (the result
// enveloped, or the method's error as 200); the removed and unknown methods (404,
// -32601; tasks/result and tasks/list are gone from the Tasks extension too); tasks/*
// from a request without the extension (400, -32021). nullopt: the request needs a turn
// of its own (tools/call, prompts/get, resources/read, tasks/get, tasks/update,
// tasks/cancel). The response is the JSON-RPC message; the status is in `http_status`.
struct ModernAnswer {
  int http_status = 200;
  std::string body;
};
std::optional<ModernAnswer> answer_stateless(const ModernRequest& request, const ModernServer& server);

// subscriptions/listen: the filter this server honours from the request's
// params.notifications (list changes it can announce, resource subscriptions when its
// resources support them; taskIds are not honoured), or the error to answer with
// (-32602 for a malformed filter, -32021 for taskIds without the Tasks extension).
std::variant<ListenFilter, ModernAnswer> listen_filter(const ModernRequest& request, const ModernServer& server);

// A `requestState` as dorm issues it: a handle to the durable record of a request waiting
// for input (the object `handle`, 32 hex digits) and the round of questions it answers,
// sealed for the principal it was issued to. 48 base64url characters: the handle (16
// bytes), the round (4), and the first 16 bytes of HMAC-SHA256 under the server's
// request-state key (Runtime::derive_key(kRequestStateKeyPurpose), derived from the secret
// kept in the store) over the handle, the round and the principal. A tampered state, or
// one issued to another principal, fails the MAC and reaches no object; the object still
// checks the round and the owner against its record (a used or expired state finds none).
struct RequestState {
  std::string handle;
  std::uint32_t round = 0;
};
inline constexpr std::string_view kRequestStateKeyPurpose = "mcp.request-state";
std::string seal_request_state(const RequestState& state, const Identity& owner, std::string_view key);
// nullopt: not a state this server issued to `caller` (format, alphabet or MAC), told
// apart by nothing.
std::optional<RequestState> open_request_state(std::string_view text, const Identity& caller, std::string_view key);

// The revisions a modern client may be told about (in -32022's data and discover's
// supportedVersions): the modern one first, then the legacy ones.
std::string supported_versions_json();

}  // namespace dorm::mcp
