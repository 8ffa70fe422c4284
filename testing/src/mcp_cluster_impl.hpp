// McpCluster's state, shared by the cluster side (mcp_cluster.cpp: time, deploys, drains)
// and the client side (mcp_client.cpp: calls and the streams they follow). Internal.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/tool_registry.hpp"
#include "dorm/testing/mcp_cluster.hpp"

namespace dorm::testing {

// One HTTP response whose body streams from a node: the client's end of a connection.
struct Connection {
  std::size_t node = 0;
  std::shared_ptr<mcp::StreamBody> body;
  bool over = false;    // ended or dropped; nothing more is read
  bool queued = false;  // a read is waiting in Impl::ready
  std::function<void(std::string_view bytes)> on_bytes;
  std::function<void(bool clean)> on_end;  // clean: the response ended; else dropped
};

struct ClientState {
  std::string session_id;
  std::size_t node = 0;
  std::int64_t next_request_id = 1;
  // The last `retry:` seen on any of the session's streams: every later reconnect waits it.
  std::optional<std::int64_t> server_retry_ms;
};

struct McpCluster::Impl {
  explicit Impl(McpClusterOptions o);

  McpClusterOptions options;
  mcp::ToolRegistry fixtures;          // used when options.session.tools is null
  actors::McpSessionOptions session;   // what every node registers
  bool closing = false;                // being destroyed: callbacks do nothing
  // Client work that arrived while nodes ran (responses, stream bytes), run after them so
  // a client never acts from inside a node's turn.
  std::deque<std::function<void()>> ready;
  // Client timers (reconnects, request timeouts) by virtual time; equal times fire in the
  // order they were set.
  std::multimap<std::int64_t, std::function<void()>> timers;
  std::vector<ClientState> clients;
  std::vector<CallRecord> calls;
  std::vector<Deploy> deploys;
  std::vector<bool> accepting;         // per node: takes connections
  std::vector<std::shared_ptr<Connection>> connections;  // open ones (pruned as they end)
  std::unique_ptr<Cluster> cluster;

  std::int64_t now() const { return cluster->clock().now_ms(); }
  void post_work(std::function<void()> work) {
    if (!closing) ready.push_back(std::move(work));
  }
  void at(std::int64_t when, std::function<void()> fn) { timers.emplace(when, std::move(fn)); }

  // ---- cluster side (mcp_cluster.cpp) ----
  void run_until_idle();
  // Runs events in time order up to `until`, or until `stop()` holds between two instants.
  void advance_until(std::int64_t until, const std::function<bool()>& stop);
  // Reads what the connection's body holds; ends it if the response ended or was cut.
  void read(const std::shared_ptr<Connection>& c);
  // Sends `call` to the node of the session; false (connection refused) if it takes none.
  bool send(std::size_t node, mcp::SessionCall call, std::function<void(mcp::HttpResponse)> on_response);
  // Follows a streamed response: `c.on_bytes`/`c.on_end` get what arrives.
  void open(const std::shared_ptr<Connection>& c);
  // Every open connection to `node` drops (its process stopped).
  void drop_connections(std::size_t node);
  // The drain window of a graceful restart, then server_draining for what still runs.
  Result<void> drain(std::size_t node, std::int64_t window_ms, Deploy& deploy);

  // ---- client side (mcp_client.cpp) ----
  Result<std::size_t> open_session(std::string session_id);
  std::size_t start_call(std::size_t client, std::string_view tool, std::string_view arguments);
  void settle(std::size_t call, Outcome outcome);
};

}  // namespace dorm::testing
