// What the MCP session's translation units share (mcp_session.cpp: requests, tools,
// the journal; mcp_session_streams.cpp: live connections, the standalone stream, resume,
// the idle policy): the wire format of SSE events, small helpers, and the per-POST and
// per-connection state. Internal to actors/src.
#pragma once

#include <caf/actor.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <openssl/rand.h>

#include <array>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/event_id.hpp"
#include "dorm/mcp/inflight_journal.hpp"
#include "dorm/mcp/request_checks.hpp"

namespace dorm::actors {
namespace session_internal {


using mcp::HttpResponse;
using mcp::Message;
using mcp::SessionCall;
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// The member `key` of `obj`, or null. (No iterator comparisons here: clang in C++20 mode
// warns that RapidJSON 1.1's member iterators compare ambiguously.)
inline const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  return obj.IsObject() && obj.HasMember(key) ? &obj[key] : nullptr;
}

inline std::string compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  value.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// A response whose body is an SSE stream of JSON-RPC messages, one `message` event each.
inline HttpResponse event_stream(const std::vector<std::string>& messages) {
  HttpResponse res;
  res.headers = {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}};
  for (const auto& m : messages) {
    res.body += "event: message\ndata: ";
    res.body += m;
    res.body += "\n\n";
  }
  return res;
}

inline HttpResponse rejected(const mcp::Rejection& r) { return HttpResponse{r.http_status, r.headers, r.body}; }

inline HttpResponse bad_request(const std::optional<mcp::RequestId>& id, int code, std::string_view message) {
  return HttpResponse{400, {{"Content-Type", "application/json"}},
                      mcp::error_response(id, code, message)};
}

// One SSE event as it goes on the wire: its id, then the message.
inline std::string sse_event(const mcp::EventId& id, std::string_view data) {
  std::string out = "id: " + id.to_string() + "\nevent: message\ndata: ";
  out += data;
  out += "\n\n";
  return out;
}

// The priming event: an id the client can resume from, the retry hint, empty data.
inline std::string sse_priming(const mcp::EventId& id, std::int64_t retry_ms) {
  return "id: " + id.to_string() + "\nretry: " + std::to_string(retry_ms) + "\ndata: \n\n";
}

inline HttpResponse sse_response(std::string body) {
  return HttpResponse{200, {{"Content-Type", mcp::kEventStream}, {"Cache-Control", "no-cache"}},
                      std::move(body)};
}

// The same 400 for every Last-Event-ID that names no stream of the caller's session.
inline HttpResponse bad_cursor() {
  return HttpResponse{400, {{"Content-Type", "application/json"}},
                      mcp::error_response(std::nullopt, mcp::kTransportError,
                                          "Last-Event-ID names no stream of this session")};
}

inline std::uint64_t random_stream_id() {
  std::uint64_t id = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&id), sizeof id) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return id;
}

using mcp::kJournalPrefix;
// The standalone stream's cursor: the id of the last event a GET carried (or its seq 0).
constexpr std::string_view kStandaloneKey = "g";
// Runtime index of sessions with requests in flight: <session object id>/<request key>.
using mcp::kInflightIndex;
// The alarm that removes finished streams once their retention has passed.
constexpr std::string_view kRetentionAlarm = "streams";
// The idle policy's alarm, and the key of the last client request's time.
constexpr std::string_view kIdleAlarm = "idle";
constexpr std::string_view kLastActivityKey = "a";

// MCP log levels (RFC 5424 severities), least severe first.
constexpr std::array<std::string_view, 8> kLogLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

inline int log_rank(std::string_view level) {
  for (std::size_t i = 0; i < kLogLevels.size(); ++i) {
    if (kLogLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

// Parses a request's params (absent: an empty object). Null if not an object.
inline bool parse_params(const Message& request, rapidjson::Document& doc) {
  doc.Parse(request.params.empty() ? "{}" : request.params.c_str());
  return !doc.HasParseError() && doc.IsObject();
}


}  // namespace session_internal

// ---- exchanges and tool contexts ----

struct McpSession::Exchange {
  // The POST's HTTP request, until its response starts.
  std::shared_ptr<mcp::Responder> responder;
  std::uint64_t stream = 0;
  // The events written while the POST's own turn runs (each stored in the event log
  // first): they open the response. Later events go to the stream's connection.
  std::string body;
  int outstanding = 0;   // tool calls not finished
  bool sealed = false;   // every message of the POST has been seen
  bool done = false;     // the stream is complete
  bool streaming = false;  // the response went to a connection (or was closed early)
  bool close_requested = false;  // a tool asked to close the connection (SSE polling)
  Lease lease;           // a session with work in flight is never evicted
};

// One open SSE connection of this session: its sink actor and the lease that keeps the
// session in memory while it is open.
struct McpSession::Connection {
  caf::actor sink;  // set by the effect that spawns it, before any write to it
  Lease lease;
};

}  // namespace dorm::actors
