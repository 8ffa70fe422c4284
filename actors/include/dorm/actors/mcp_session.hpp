// McpSession — the durable object behind one MCP session.
//
// Created by `initialize` (which stores the session's metadata: negotiated revision,
// client capabilities and info, owner, log level), it answers every later SessionCall
// from that metadata, so after eviction or a process restart the same session id keeps
// working without a new initialize. A call from an identity other than the owner gets
// the same 404 as a session that does not exist, and a `session_owner_mismatch` log line.
// DELETE removes everything the session stored; later calls get 404.
//
// It is driven by SessionCall messages only (see dorm/mcp/session_call.hpp): the HTTP
// endpoint sends them, and so can a test on virtual time.
#pragma once

#include <optional>
#include <string>

#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/session_meta.hpp"
#include "dorm/runtime/runtime.hpp"

namespace dorm::actors {

struct McpSessionOptions {
  std::string server_name = "dorm";
  std::string server_version;
  // Until the idle policy (DESIGN §6) takes over eviction: sessions idle this long leave
  // memory (their storage stays).
  std::chrono::milliseconds idle_timeout{10 * 60 * 1000};
};

class McpSession : public DurableObject {
 public:
  explicit McpSession(const McpSessionOptions& options) : options_(options) {}
  void on_start(StartReason reason) override;
  caf::behavior behavior() override;

 private:
  mcp::HttpResponse handle(const mcp::SessionCall& call);
  mcp::HttpResponse initialize(const mcp::SessionCall& call);
  mcp::HttpResponse post(const mcp::SessionCall& call);
  mcp::HttpResponse remove();
  // The answer to one request inside a POST (JSON text of a response message).
  std::string answer(const mcp::Message& request);
  void store_meta();

  const McpSessionOptions& options_;
  std::optional<mcp::SessionMeta> meta_;  // none: no such session (never made, or deleted)
};

// Registers the mcp-session namespace on `runtime`. `options` must outlive it.
Result<void> register_mcp_session(Runtime& runtime, const McpSessionOptions& options);

}  // namespace dorm::actors
