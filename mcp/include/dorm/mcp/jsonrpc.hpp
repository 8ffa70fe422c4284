// The JSON-RPC 2.0 envelope of MCP messages: reading a POST body, writing messages.
//
// A POST body to `/mcp` is one JSON-RPC message — a request (method and id), a
// notification (method, no id), or a response (result or error, with the id it answers) —
// or, from sessions that negotiated 2025-03-26 only, a batch: a JSON array of them.
// parse_body checks the envelope and nothing inside it: it says what kind each message
// is, takes out its id and method, and keeps `params`, `result` and `error` as compact
// JSON text for the layers that understand them. Anything that is not well-formed UTF-8
// JSON is a parse error (-32700); well-formed JSON that is not a valid JSON-RPC 2.0
// message is an invalid request (-32600). The writers produce compact JSON text with
// RapidJSON's Writer. Bodies are size-limited by the HTTP layer, not here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dorm::mcp {

// Error codes of JSON-RPC 2.0 (§5.1).
inline constexpr int kParseError = -32700;      // not JSON, or not UTF-8
inline constexpr int kInvalidRequest = -32600;  // JSON, but not a valid JSON-RPC message
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined server errors (-32000..-32099), numbered as the official MCP SDK
// numbers them so clients see familiar codes.
inline constexpr int kTransportError = -32000;   // a request the HTTP transport refuses
inline constexpr int kSessionNotFound = -32001;  // 404: unknown, ended or foreign session
// The reaper's answer to a request whose work was interrupted by a restart or a reset.
// The SDK client's own request timeout is also -32001; clients tell them apart by the
// error's `data.reason`.
inline constexpr int kRequestInterrupted = -32001;

// A batch longer than this is refused (-32600). Batches come only from 2025-03-26
// clients, which batch a few related messages; the bound keeps one POST from fanning out
// into an unbounded number of dispatches.
inline constexpr std::size_t kMaxBatchMessages = 100;

// The id of a request: a string or an integer (MCP forbids null and fractional ids).
// Ordered and hashable so it can key maps; to_key() is its stable text form for storage
// keys.
class RequestId {
 public:
  explicit RequestId(std::int64_t value) : value_(value) {}
  explicit RequestId(std::string value) : value_(std::move(value)) {}

  bool is_integer() const { return value_.index() == 0; }
  bool is_string() const { return value_.index() == 1; }
  // Precondition: is_integer().
  std::int64_t integer() const { return std::get<0>(value_); }
  // Precondition: is_string().
  const std::string& string() const { return std::get<1>(value_); }

  // The id as JSON: `42` or `"abc"` (escaped as JSON requires).
  std::string to_json() const;

  // A stable, unambiguous text form: "i:<decimal>" or "s:<the string's bytes>". Integers
  // and strings never collide ("i:1" is the integer 1, "s:1" the string "1"). It is a key
  // component, not a sortable number: "i:10" sorts before "i:9".
  std::string to_key() const;

  // The inverse of to_key(); nullopt if `key` is not a form to_key() produces.
  static std::optional<RequestId> from_key(std::string_view key);

  friend bool operator==(const RequestId&, const RequestId&) = default;
  friend auto operator<=>(const RequestId&, const RequestId&) = default;

 private:
  std::variant<std::int64_t, std::string> value_;
};

// One JSON-RPC message, its envelope checked.
struct Message {
  enum class Kind {
    request,          // method + id: the receiver answers it
    notification,     // method, no id: never answered
    result_response,  // result + id
    error_response,   // error + id (null when the request it answers was unreadable)
  };

  Kind kind = Kind::notification;
  // request, result_response: always set. error_response: unset when the id was null.
  // notification: never set.
  std::optional<RequestId> id;
  // request, notification: the method name (any string, possibly empty); else empty.
  std::string method;
  // request, notification: `params` as compact JSON text (an object or an array), empty
  // when the message has none. Compact means re-serialized by RapidJSON: whitespace goes
  // and a number may be spelled differently (1.50 → 1.5), the value is the same.
  std::string params;
  // result_response: `result` as compact JSON text (any JSON value); else empty.
  std::string result;
  // error_response: `error` as compact JSON text, an object with an integer `code`, a
  // string `message` and perhaps `data`; else empty.
  std::string error;

  bool is_response() const { return kind == Kind::result_response || kind == Kind::error_response; }

  friend bool operator==(const Message&, const Message&) = default;
};

// "request", "notification", "result_response", "error_response".
std::string_view to_string(Message::Kind kind);

// A POST body that passed parse_body.
struct ParsedBody {
  // At least one message; exactly one unless `batch`.
  std::vector<Message> messages;
  // The body was a JSON array. (An array of one message is still a batch: whether batches
  // are allowed at all depends on the session's protocol version, which the caller knows.)
  bool batch = false;
};

// Why parse_body refused a body, ready to be sent back as an error response with
// error_response(id, code, message).
struct ParseFailure {
  int code = kParseError;  // kParseError or kInvalidRequest
  std::string message;     // for a person; says what was wrong and where
  // The id of the offending message when the body was a single message whose id could
  // be read; otherwise unset (the answer then carries `"id": null`).
  std::optional<RequestId> id;
};

// Reads a POST body.
//  - Not JSON, not UTF-8, nested deeper than 128 levels → kParseError.
//  - kInvalidRequest, naming the reason (and the batch element, counting from 0) when:
//    the body is neither an object nor an array; a batch is empty, longer than
//    kMaxBatchMessages, holds a non-object, or mixes requests or notifications with
//    responses (2025-03-26 allows one or the other); `jsonrpc` is not "2.0"; a member
//    of the envelope appears twice; `id` is not a string or an integer in int64 range,
//    or is null on anything but an error response; `method` is not a string; `params`
//    is not an object or an array, or sits on a response; a message has both `method`
//    and `result`/`error`, or both `result` and `error`, or none of them; a response
//    has no `id`; `error` is not an object with an integer `code` and a string
//    `message`.
// Members the envelope does not define are ignored. A failure in one message of a batch
// fails the whole body. Never throws for any input.
std::variant<ParsedBody, ParseFailure> parse_body(std::string_view body);

// Writers. Each returns one compact JSON-RPC 2.0 message. Arguments named *_json must be
// valid JSON text, e.g. a Message's params/result/error or a Writer's output (checked by
// assert in debug builds); the text is copied into the message as it is.

// {"jsonrpc":"2.0","id":ID,"result":RESULT}. Precondition: result_json is non-empty.
std::string result_response(const RequestId& id, std::string_view result_json);

// {"jsonrpc":"2.0","id":ID or null,"error":{"code":CODE,"message":MESSAGE[,"data":DATA]}}.
// `data` is left out when data_json is empty.
std::string error_response(const std::optional<RequestId>& id, int code, std::string_view message,
                           std::string_view data_json = {});

// {"jsonrpc":"2.0","method":METHOD[,"params":PARAMS]}. `params` is left out when
// params_json is empty; otherwise it must be a JSON object or array.
std::string notification(std::string_view method, std::string_view params_json = {});

// {"jsonrpc":"2.0","id":ID,"method":METHOD[,"params":PARAMS]}, params as for
// notification().
std::string request(const RequestId& id, std::string_view method,
                    std::string_view params_json = {});

// The message as JSON text, such that parse_body(to_json(m)) yields exactly `m`.
std::string to_json(const Message& message);

}  // namespace dorm::mcp

template <>
struct std::hash<dorm::mcp::RequestId> {
  std::size_t operator()(const dorm::mcp::RequestId& id) const noexcept {
    return id.is_integer() ? std::hash<std::int64_t>{}(id.integer())
                           : std::hash<std::string>{}(id.string()) ^ 0x9e3779b97f4a7c15ull;
  }
};
