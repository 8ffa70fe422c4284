// The worked examples of docs/runtime.md ("Rolling deploys on virtual time"): 100 MCP
// sessions on a 3-node cluster, a rolling deploy in the middle of their tool calls, and
// what every client saw. The code between the markers is quoted in the doc verbatim;
// docs_example_test.cpp fails if the two drift apart.
#include <doctest/doctest.h>

#include "dorm/testing/mcp_cluster.hpp"
#include "numbered.hpp"

using namespace dorm::testing;

// [example: incident-table]
TEST_CASE("rolling deploy: killed calls fail fast with priming and the reaper, hang without") {
  struct Variant {
    const char* name;
    bool priming, reaper;
  };
  for (auto v : {Variant{"no-fix", false, false}, Variant{"priming-only", true, false},
                 Variant{"reaper", true, true}}) {
    CAPTURE(v.name);
    McpClusterOptions options;
    options.nodes = 3;
    options.session.priming = v.priming;  // the dev switches of `dorm serve`
    options.session.reaper = v.reaper;
    options.session.retry_ms = 500;       // the priming event's `retry:` hint
    McpCluster cluster(options);

    // 100 sessions, each running a 20 s call of the `sleep` fixture tool.
    for (int i = 0; i < 100; ++i) {
      auto client = cluster.open_session(numbered("session-", i));
      REQUIRE(client.ok());
      client->call("sleep", R"({"ms":20000})");
    }
    // A rolling deploy, 5 s apart: node 0 crashes, node 1 restarts gracefully (without a
    // drain), node 2 crashes; each is back 100 ms later.
    for (std::size_t node = 0; node < cluster.size(); ++node) {
      cluster.advance(5'000);
      auto kind = node == 1 ? RestartKind::graceful : RestartKind::crash;
      REQUIRE(cluster.restart(node, kind, /*downtime_ms=*/100).ok());
    }
    cluster.settle();  // until every call has its outcome (at most the clients' timeout)

    auto row = summarize(cluster.calls());
    CHECK(row.calls == 100);
    CHECK(row.answered == 0);  // each call was running when its node went down
    if (v.reaper) {
      CHECK(row.hung == 0);
      CHECK(row.reasons["server_restart"] == 100);
      CHECK(*row.error_ms_max <= 2 * options.session.retry_ms);  // the SDK's two attempts
    } else {
      CHECK(row.hung == 100);  // until the client's own timeout
    }
  }
}
// [example: incident-table]

// [example: graceful-drain]
TEST_CASE("rolling deploy: a drain window answers the calls that finish in it; the rest fail fast") {
  McpClusterOptions options;
  options.nodes = 3;
  McpCluster cluster(options);
  for (int i = 0; i < 100; ++i) {
    auto client = cluster.open_session(numbered("session-", i));
    REQUIRE(client.ok());
    client->call("sleep", i % 2 == 0 ? R"({"ms":3000})" : R"({"ms":30000})");  // short, long
  }
  // Each node in turn stops taking connections, lets its running calls go on for up to
  // 5 s, stops the rest with -32001 server_draining, and restarts (like SIGTERM and a
  // successor with `dorm serve --drain-timeout 5`).
  for (std::size_t node = 0; node < cluster.size(); ++node) {
    REQUIRE(cluster.drain_and_restart(node, /*drain_ms=*/5'000).ok());
  }
  cluster.settle();

  auto row = summarize(cluster.calls());
  CHECK(row.answered == 50);                    // every 3 s call
  CHECK(row.reasons["server_draining"] == 50);  // every 30 s call...
  CHECK(*row.error_ms_max == 5'000);            // ...at the end of its node's window
  CHECK(row.hung == 0);
}
// [example: graceful-drain]

TEST_CASE("rolling deploy: each call is answered if it finished before its node went down, else failed at the first resume") {
  McpClusterOptions options;
  options.nodes = 3;
  options.session.retry_ms = 500;
  McpCluster cluster(options);
  std::vector<std::int64_t> duration_ms;
  for (int i = 0; i < 100; ++i) {
    auto client = cluster.open_session(numbered("mixed-", i));
    REQUIRE(client.ok());
    duration_ms.push_back(1000 + (i * 379) % 15'000);  // 1 to 16 s, spread over the deploys
    client->call("sleep", R"({"ms":)" + std::to_string(duration_ms.back()) + "}");
  }
  for (std::size_t node = 0; node < cluster.size(); ++node) {
    cluster.advance(4'000);
    REQUIRE(cluster.restart(node, node == 1 ? RestartKind::graceful : RestartKind::crash, 100).ok());
  }
  cluster.settle();
  REQUIRE(cluster.deploys().size() == 3);
  std::size_t answered = 0, failed = 0;
  for (std::size_t i = 0; i < cluster.calls().size(); ++i) {
    const auto& call = cluster.calls()[i];
    CAPTURE(i);
    std::int64_t down_at = cluster.deploys()[call.node].at_ms;
    if (call.start_ms + duration_ms[i] <= down_at) {
      ++answered;
      CHECK(call.outcome.kind == OutcomeKind::answered);
      CHECK(call.end_ms == call.start_ms + duration_ms[i]);
      CHECK_FALSE(call.deploy_ms.has_value());
    } else {
      ++failed;
      CHECK(call.outcome.reason == "server_restart");
      CHECK(call.deploy_ms == down_at);
      CHECK(call.end_ms == down_at + options.session.retry_ms);
    }
  }
  CHECK(answered > 0);  // the workload does put calls on both sides of the deploys
  CHECK(failed > 0);
}
