// McpCluster's clients against real session objects on virtual time, one rule at a time:
// a call answered with no deploy; a crash with and without priming and the reaper; the
// SDK's two reconnect attempts against a node that is down longer; a call to a node that
// is down; a graceful restart without and with a drain window.
#include <doctest/doctest.h>

#include "dorm/mcp/session_call.hpp"
#include "dorm/testing/mcp_cluster.hpp"
#include "numbered.hpp"

using namespace dorm;
using namespace dorm::testing;

namespace {

std::string sleep_args(std::int64_t ms) { return R"({"ms":)" + std::to_string(ms) + "}"; }

// One session on node `node` of a cluster.
McpClient session_on(McpCluster& cluster, std::size_t node, std::string_view prefix = "s-") {
  for (int i = 0;; ++i) {
    auto name = numbered(prefix, i);
    auto id = cluster.cluster().id_from_name("mcp-session", name);
    if (cluster.cluster().shard_of(id) != node) continue;
    auto client = cluster.open_session(name);
    REQUIRE(client.ok());
    return *client;
  }
}

McpClusterOptions options_with(bool priming, bool reaper) {
  McpClusterOptions o;
  o.nodes = 2;
  o.session.priming = priming;
  o.session.reaper = reaper;
  o.session.retry_ms = 500;
  o.client.request_timeout_ms = 10'000;
  return o;
}

}  // namespace

TEST_CASE("mcp cluster: with no deploy a call is answered when its tool finishes") {
  McpCluster cluster(options_with(true, true));
  auto client = session_on(cluster, 1);
  CHECK(client.node() == 1);
  auto call = client.call("sleep", sleep_args(1500));
  cluster.advance(1499);
  CHECK(cluster.calls()[call].outcome.kind == OutcomeKind::pending);
  cluster.advance(1);
  const auto& record = cluster.calls()[call];
  CHECK(record.outcome.kind == OutcomeKind::answered);
  CHECK(record.end_ms - record.start_ms == 1500);
  CHECK_FALSE(record.deploy_ms.has_value());
  CHECK(record.session == client.session_id());
  CHECK(record.tool == "sleep");
}

TEST_CASE("mcp cluster: a crash mid-call — failed fast with priming and the reaper, hung without either") {
  struct Case {
    bool priming, reaper;
    OutcomeKind expected;
  };
  for (Case c : {Case{true, true, OutcomeKind::failed}, Case{true, false, OutcomeKind::hung},
                 Case{false, true, OutcomeKind::hung}, Case{false, false, OutcomeKind::hung}}) {
    CAPTURE(c.priming);
    CAPTURE(c.reaper);
    McpCluster cluster(options_with(c.priming, c.reaper));
    auto client = session_on(cluster, 0);
    auto other = session_on(cluster, 1);  // on the node that stays up
    auto killed = client.call("sleep", sleep_args(5000));
    auto spared = other.call("sleep", sleep_args(5000));
    cluster.advance(1000);
    REQUIRE(cluster.restart(0, RestartKind::crash).ok());
    cluster.settle();
    CHECK(cluster.pending() == 0);
    const auto& record = cluster.calls()[killed];
    CHECK(record.outcome.kind == c.expected);
    CHECK(record.deploy_ms == record.start_ms + 1000);
    if (c.expected == OutcomeKind::failed) {
      CHECK(record.outcome.code == -32001);
      CHECK(record.outcome.reason == "server_restart");
      // At the SDK's first attempt: one retry hint after the crash.
      CHECK(record.after_deploy_ms() == 500);
    } else {
      CHECK(record.end_ms == record.start_ms + 10'000);  // the client's timeout
    }
    CHECK(cluster.calls()[spared].outcome.kind == OutcomeKind::answered);
    CHECK_FALSE(cluster.calls()[spared].deploy_ms.has_value());
    REQUIRE(cluster.deploys().size() == 1);
    CHECK(cluster.deploys()[0].node == 0);
  }
}

TEST_CASE("mcp cluster: the SDK tries twice, one retry hint apart; a node down longer leaves the call hung") {
  for (std::int64_t downtime : {400, 700, 999, 1001, 3000}) {
    CAPTURE(downtime);
    McpCluster cluster(options_with(true, true));
    auto client = session_on(cluster, 0);
    auto call = client.call("sleep", sleep_args(60'000));
    cluster.advance(100);
    REQUIRE(cluster.restart(0, RestartKind::crash, downtime).ok());
    cluster.settle();
    const auto& record = cluster.calls()[call];
    if (downtime < 500) {
      CHECK(record.outcome.reason == "server_restart");
      CHECK(record.after_deploy_ms() == 500);
    } else if (downtime < 1000) {
      CHECK(record.outcome.reason == "server_restart");
      CHECK(record.after_deploy_ms() == 1000);  // the first attempt was refused
    } else {
      CHECK(record.outcome.kind == OutcomeKind::hung);
    }
  }
}

TEST_CASE("mcp cluster: a 2025-06-18 session gets no priming event, so its killed call cannot resume") {
  auto o = options_with(true, true);
  o.client.protocol_version = "2025-06-18";
  McpCluster cluster(o);
  auto client = session_on(cluster, 0);
  auto call = client.call("sleep", sleep_args(60'000));
  cluster.advance(100);
  REQUIRE(cluster.restart(0, RestartKind::crash).ok());
  cluster.settle();
  CHECK(cluster.calls()[call].outcome.kind == OutcomeKind::hung);
}

TEST_CASE("mcp cluster: a call to a node that is down is refused at once; after it is back it runs") {
  McpCluster cluster(options_with(true, true));
  auto client = session_on(cluster, 1);
  REQUIRE(cluster.take_down(1, RestartKind::graceful).ok());
  auto refused = client.call("sleep", sleep_args(100));
  CHECK(cluster.calls()[refused].outcome.kind == OutcomeKind::failed);
  CHECK(cluster.calls()[refused].outcome.reason == "connection_refused");
  CHECK(cluster.calls()[refused].end_ms == cluster.calls()[refused].start_ms);
  REQUIRE(cluster.bring_up(1).ok());
  auto later = client.call("sleep", sleep_args(100));
  cluster.settle();
  CHECK(cluster.calls()[later].outcome.kind == OutcomeKind::answered);
}

TEST_CASE("mcp cluster: a graceful restart without a drain drops calls like a crash; the reaper answers them") {
  McpCluster cluster(options_with(true, true));
  auto client = session_on(cluster, 0);
  auto call = client.call("sleep", sleep_args(5000));
  cluster.advance(1000);
  REQUIRE(cluster.restart(0, RestartKind::graceful, 200, "v2").ok());
  cluster.settle();
  const auto& record = cluster.calls()[call];
  CHECK(record.outcome.reason == "server_restart");
  CHECK(record.after_deploy_ms() == 500);
  REQUIRE(cluster.deploys().size() == 1);
  CHECK(cluster.deploys()[0].kind == RestartKind::graceful);
}

TEST_CASE("mcp cluster: a node that stops aborts its sessions' open response bodies itself") {
  // McpCluster drops a stopped node's connections anyway, as a dead process's sockets
  // close; this checks that the runtime does not leave them open either.
  for (auto kind : {RestartKind::crash, RestartKind::graceful}) {
    CAPTURE(static_cast<int>(kind));
    McpClusterOptions o;
    o.nodes = 1;
    McpCluster mcp_cluster(o);
    REQUIRE(mcp_cluster.open_session("s-raw").ok());
    Cluster& cluster = mcp_cluster.cluster();
    mcp::SessionCall call;
    call.kind = mcp::SessionCall::Kind::post;
    call.session_id = "s-raw";
    call.caller = o.client.identity;
    call.protocol_version = "2025-11-25";
    auto parsed = mcp::parse_body(
        R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":10000}}})");
    call.messages = std::get<mcp::ParsedBody>(parsed).messages;
    std::shared_ptr<mcp::StreamBody> body;
    call.responder = std::make_shared<mcp::Responder>([&](mcp::HttpResponse r) { body = r.stream; });
    cluster.deliver(ObjectHandle{cluster.id_from_name("mcp-session", "s-raw")}, caf::make_message(std::move(call)),
                    nullptr);
    cluster.run_until_idle();
    REQUIRE(body);
    auto primed = body->take();
    body->sent(primed.bytes.size());
    CHECK(primed.bytes.find("retry: 500") != std::string::npos);
    cluster.take_down(0, kind);
    CHECK(body->closed());
    CHECK(body->take().abort);
  }
}

TEST_CASE("mcp cluster: a drain window answers the calls that finish in it; the rest fail with server_draining at its end") {
  McpCluster cluster(options_with(true, true));
  auto client = session_on(cluster, 0);
  auto other = session_on(cluster, 0, "t-");
  auto short_call = client.call("sleep", sleep_args(2000));
  auto long_call = other.call("sleep", sleep_args(30'000));
  cluster.advance(1000);
  REQUIRE(cluster.drain_and_restart(0, /*drain_ms=*/5000).ok());
  cluster.settle();
  const auto& answered = cluster.calls()[short_call];
  CHECK(answered.outcome.kind == OutcomeKind::answered);
  CHECK(answered.end_ms - answered.start_ms == 2000);
  CHECK(answered.deploy_ms == answered.start_ms + 1000);  // the deploy had begun: the drain let it finish
  const auto& drained = cluster.calls()[long_call];
  CHECK(drained.outcome.code == -32001);
  CHECK(drained.outcome.reason == "server_draining");
  CHECK(drained.after_deploy_ms() == 5000);  // at the end of the window, on its live stream
  REQUIRE(cluster.deploys().size() == 1);
  const auto& deploy = cluster.deploys()[0];
  CHECK(deploy.drain_ms == 5000);
  CHECK(deploy.stopped_ms - deploy.at_ms == 5000);
  CHECK(deploy.drained_calls == 1);
  CHECK(deploy.drain_failures == 0);
  // The restarted node found nothing to reap: the client's resume after the error got 204
  // and the session works.
  auto later = other.call("sleep", sleep_args(10));
  cluster.settle();
  CHECK(cluster.calls()[later].outcome.kind == OutcomeKind::answered);
}

TEST_CASE("mcp cluster: a drain stops the node as soon as no call runs, and stops none") {
  McpCluster cluster(options_with(true, true));
  auto client = session_on(cluster, 0);
  auto call = client.call("sleep", sleep_args(2500));
  cluster.advance(1000);
  REQUIRE(cluster.drain_and_restart(0, /*drain_ms=*/30'000).ok());
  const auto& record = cluster.calls()[call];
  CHECK(record.outcome.kind == OutcomeKind::answered);
  CHECK(cluster.clock().now_ms() == record.end_ms);
  REQUIRE(cluster.deploys().size() == 1);
  CHECK(cluster.deploys()[0].stopped_ms - cluster.deploys()[0].at_ms == 1500);
  CHECK(cluster.deploys()[0].drained_calls == 0);
}
