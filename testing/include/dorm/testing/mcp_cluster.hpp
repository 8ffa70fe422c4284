// dorm::testing::McpCluster — MCP sessions on a Cluster, driven by in-process clients
// that behave like the official TypeScript SDK client, all on one virtual clock: a test
// opens sessions, starts tool calls, restarts nodes (crash, graceful, graceful with a
// drain window) and advances time, then asserts what every client saw (call_outcome.hpp).
// A hundred sessions and a minute of virtual time take well under a second of CPU.
//
// The clients speak to the session objects the way `dorm serve`'s HTTP endpoint does —
// mcp::SessionCall messages answered through an mcp::Responder, a streamed body read from
// its mcp::StreamBody — with no sockets, and follow the SDK's reconnect rules
// (sdk_reconnect.hpp) on the virtual clock: a dropped POST stream is resumed only after
// it delivered an event id (the priming event), with a GET and Last-Event-ID after the
// priming `retry:` (or the SDK's backoff), at most `max_retries` failed attempts; only a
// JSON-RPC result or error settles a call, and one without either by the client's
// timeout hung. They do not open the standalone GET stream (it carries no call's answer)
// and send no notifications/cancelled at their timeout, and they stop resuming a call's
// streams there: nothing after it changes the call's outcome.
//
// What a deploy looks like to a client: a node that is down, or draining, refuses
// connections (a POST then fails at once; a resume attempt counts as failed). When a node
// stops, crashed or gracefully, every open connection to it drops: its streams end
// without their answer, and the client resumes them by the rules above. A graceful
// restart with a drain window first stops taking connections and lets running calls
// finish for that long (less once none is left); calls still running then are stopped by
// their sessions with -32001 `server_draining` (actors/drain.hpp), delivered on their
// streams before the node stops. Like `dorm serve`, a node that starts wakes the sessions
// with in-flight records so their reaper runs before any client is back
// (actors/boot_reaper.hpp).
//
// docs/runtime.md ("Rolling deploys on virtual time") has a worked example
// (tests/testing/rolling_deploy_test.cpp); `dorm deploy-sim --virtual` runs its rows on it. Single-threaded, like everything on virtual
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dorm/actors/mcp_session.hpp"
#include "dorm/mcp/auth_tokens.hpp"
#include "dorm/testing/call_outcome.hpp"
#include "dorm/testing/cluster.hpp"
#include "dorm/testing/sdk_reconnect.hpp"

namespace dorm::testing {

struct McpClientOptions {
  ReconnectOptions reconnect;
  // The SDK's DEFAULT_REQUEST_TIMEOUT_MSEC: a call with no outcome by then hung.
  std::int64_t request_timeout_ms = 60'000;
  // Offered in initialize; 2025-11-25 and later get priming events.
  std::string protocol_version = "2025-11-25";
  mcp::Identity identity{"tester", "tests"};
};

struct McpClusterOptions {
  std::size_t nodes = 3;
  // Every node's runtime (the cluster sets the clock, secret and routing).
  RuntimeOptions runtime;
  // Every node's sessions: retry_ms (the priming `retry:`), the `reaper` and `priming`
  // switches, ... With `tools` null, the "testing" fixtures (actors/fixtures.hpp).
  actors::McpSessionOptions session;
  McpClientOptions client;
};

// A node going down, as recorded by take_down.
struct Deploy {
  std::size_t node = 0;
  RestartKind kind = RestartKind::crash;
  std::int64_t at_ms = 0;  // the node stopped taking connections
  std::optional<std::int64_t> drain_ms;  // graceful with a drain window of this length
  // When the node stopped: at_ms, or later by the part of the drain window it used.
  std::int64_t stopped_ms = 0;
  std::size_t drained_calls = 0;   // calls the drain stopped with server_draining
  std::size_t drain_failures = 0;  // sessions that did not answer the drain
};

class McpCluster;

// One client session (a handle; the cluster owns its state).
class McpClient {
 public:
  const std::string& session_id() const;
  std::size_t node() const;
  // Calls tool `name` with `arguments` (a JSON object's text) now; returns the call's
  // index in McpCluster::calls(). Its record fills in as the cluster runs.
  std::size_t call(std::string_view name, std::string_view arguments);

 private:
  friend class McpCluster;
  McpClient(McpCluster* cluster, std::size_t index) : cluster_(cluster), index_(index) {}
  McpCluster* cluster_;
  std::size_t index_;
};

class McpCluster {
 public:
  explicit McpCluster(McpClusterOptions options = {});
  ~McpCluster();
  McpCluster(const McpCluster&) = delete;
  McpCluster& operator=(const McpCluster&) = delete;

  // Initializes session `session_id` (and sends notifications/initialized), running
  // until it is answered. Errors: unavailable if its node is down, or the session's
  // error status and body.
  Result<McpClient> open_session(std::string session_id);

  // Every call started, in start order.
  const std::vector<CallRecord>& calls() const;
  const std::vector<Deploy>& deploys() const;
  // Calls that have no outcome yet.
  std::size_t pending() const;

  // Runs nodes and clients until nothing is left to do at this instant.
  void run_until_idle();
  // Advances the clock by `ms`: node timers and client timers (reconnects, timeouts) in
  // order, everything due at each instant run before time moves on.
  void advance(std::int64_t ms);
  // Advances until every call has its outcome (at most one client timeout from now).
  void settle();

  // The node stops taking connections, every pending call on it is marked as hit by this
  // deploy, and it stops (crash or graceful); its open connections drop. Graceful with
  // `drain_ms`: before it stops, running calls get up to that much virtual time to finish
  // (the node stops as soon as none is left), then the rest are stopped with
  // server_draining. Errors: the drain's (reading the in-flight index).
  Result<void> take_down(std::size_t node, RestartKind kind,
                         std::optional<std::int64_t> drain_ms = std::nullopt);
  // Starts the node (with `version_label`, a redeploy), wakes the sessions with in-flight
  // records (boot reaping, as `dorm serve` does), and takes connections again. Errors:
  // the start's.
  Result<void> bring_up(std::size_t node, std::optional<std::string> version_label = {});
  // take_down, `downtime_ms` of virtual time with the other nodes running, bring_up.
  Result<void> restart(std::size_t node, RestartKind kind, std::int64_t downtime_ms = 0,
                       std::optional<std::string> version_label = {});
  // The same, graceful with a drain window of `drain_ms`.
  Result<void> drain_and_restart(std::size_t node, std::int64_t drain_ms, std::int64_t downtime_ms = 0,
                                 std::optional<std::string> version_label = {});

  VirtualClock& clock();
  std::size_t size() const;
  // The cluster underneath (restart nodes through this class, or deploys go unrecorded).
  Cluster& cluster();

  struct Impl;

 private:
  friend class McpClient;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::testing
