// McpCluster, the cluster side: nodes hosting the session namespace, one event loop over
// node timers and client timers on the virtual clock, and deploys (take_down, drain,
// bring_up) as the clients see them.
#include <algorithm>
#include <stdexcept>

#include "dorm/actors/boot_reaper.hpp"
#include "dorm/actors/drain.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/namespaces.hpp"
#include "mcp_cluster_impl.hpp"

namespace dorm::testing {

McpCluster::Impl::Impl(McpClusterOptions o) : options(std::move(o)), session(options.session) {
  if (!session.tools) {
    if (auto ok = actors::register_fixtures(fixtures, "testing"); !ok) {
      throw std::logic_error("the testing fixtures do not register: " + ok.error().describe());
    }
    session.tools = &fixtures;
  }
  accepting.assign(options.nodes, true);
  ClusterOptions c;
  c.nodes = options.nodes;
  c.runtime = options.runtime;
  c.setup = [this](Runtime& rt) {
    if (auto ok = actors::register_mcp_session(rt, session); !ok) {
      throw std::logic_error("the session namespace does not register: " + ok.error().describe());
    }
  };
  cluster = std::make_unique<Cluster>(std::move(c));
}

void McpCluster::Impl::run_until_idle() {
  while (true) {
    cluster->run_until_idle();
    if (ready.empty()) return;
    auto work = std::move(ready);
    ready.clear();
    for (auto& w : work) w();
  }
}

void McpCluster::Impl::advance_until(std::int64_t until, const std::function<bool()>& stop) {
  run_until_idle();
  while (!stop()) {
    auto next = cluster->next_timer_ms();
    if (!timers.empty() && (!next || timers.begin()->first < *next)) next = timers.begin()->first;
    if (!next || *next > until) break;
    // Node timers due by then (none before it: it is the earliest event), then clients'.
    cluster->advance(std::max<std::int64_t>(0, *next - now()));
    run_until_idle();
    while (!timers.empty() && timers.begin()->first <= now()) {
      auto fire = std::move(timers.begin()->second);
      timers.erase(timers.begin());
      fire();
      run_until_idle();
    }
  }
  if (!stop() && until > now()) cluster->advance(until - now());
  run_until_idle();
}

bool McpCluster::Impl::send(std::size_t node, mcp::SessionCall call,
                            std::function<void(mcp::HttpResponse)> on_response) {
  if (!accepting[node] || !cluster->up(node)) return false;
  auto id = cluster->id_from_name(actors::kMcpSessionNamespace, call.session_id);
  // The answer is handled after the node's turn, like a response read off a socket.
  call.responder = std::make_shared<mcp::Responder>(
      [this, on_response = std::move(on_response)](mcp::HttpResponse r) {
        post_work([on_response, r = std::move(r)]() mutable { on_response(std::move(r)); });
      });
  cluster->deliver(ObjectHandle{id}, caf::make_message(std::move(call)), nullptr);
  return true;
}

void McpCluster::Impl::open(const std::shared_ptr<Connection>& c) {
  std::erase_if(connections, [](const auto& old) { return old->over; });
  connections.push_back(c);
  std::weak_ptr<Connection> weak = c;
  // Called by the session's sink actor as it writes: the read waits until the node's
  // turn is over.
  c->body->attach([this, weak] {
    auto conn = weak.lock();
    if (!conn || conn->queued || conn->over) return;
    conn->queued = true;
    post_work([this, conn] {
      conn->queued = false;
      read(conn);
    });
  });
}

void McpCluster::Impl::read(const std::shared_ptr<Connection>& c) {
  if (c->over) return;
  auto pending = c->body->take();
  c->body->sent(pending.bytes.size());
  if (!pending.bytes.empty()) c->on_bytes(pending.bytes);
  if (!pending.end && !pending.abort) return;
  c->body->close();
  c->over = true;
  c->on_end(pending.end);
}

void McpCluster::Impl::drop_connections(std::size_t node) {
  auto open_now = connections;
  for (auto& c : open_now) {
    if (c->node != node || c->over) continue;
    read(c);  // what was sent before the process stopped still arrives
    if (c->over) continue;
    c->body->close();
    c->over = true;
    c->on_end(false);
  }
  std::erase_if(connections, [](const auto& c) { return c->over; });
}

Result<void> McpCluster::Impl::drain(std::size_t node, std::int64_t window_ms, Deploy& deploy) {
  Runtime& runtime = cluster->node(node);
  std::optional<Error> error;
  auto idle = [&] {
    auto running = actors::running_calls(runtime);
    if (!running) error = std::move(running).error();
    return error || *running == 0;
  };
  // The window: the node's running calls go on (their streams too), nothing new comes in.
  advance_until(now() + window_ms, idle);
  bool done = idle();
  if (error) return std::move(*error);
  if (done) return {};
  std::optional<actors::DrainReport> report;
  auto sent = actors::drain_running_calls(runtime, [&report](actors::DrainReport r) { report = std::move(r); });
  if (!sent) return sent;
  run_until_idle();  // every session answers within the instant: nothing in a drain waits on time
  if (report) {
    deploy.drained_calls = report->calls;
    deploy.drain_failures = report->failed;
  }
  return {};
}

McpCluster::McpCluster(McpClusterOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->run_until_idle();
}

McpCluster::~McpCluster() {
  // Stopping the nodes answers and aborts what they hold; nobody listens any more.
  impl_->closing = true;
  impl_->cluster.reset();
}

const std::vector<CallRecord>& McpCluster::calls() const { return impl_->calls; }
const std::vector<Deploy>& McpCluster::deploys() const { return impl_->deploys; }

std::size_t McpCluster::pending() const {
  return static_cast<std::size_t>(std::count_if(impl_->calls.begin(), impl_->calls.end(), [](const auto& c) {
    return c.outcome.kind == OutcomeKind::pending;
  }));
}

void McpCluster::run_until_idle() { impl_->run_until_idle(); }

void McpCluster::advance(std::int64_t ms) {
  impl_->advance_until(impl_->now() + ms, [] { return false; });
}

void McpCluster::settle() {
  impl_->advance_until(impl_->now() + impl_->options.client.request_timeout_ms,
                       [this] { return pending() == 0; });
}

Result<void> McpCluster::take_down(std::size_t node, RestartKind kind, std::optional<std::int64_t> drain_ms) {
  if (!impl_->cluster->up(node)) return {};
  impl_->accepting[node] = false;
  Deploy deploy{node, kind, impl_->now(), kind == RestartKind::graceful ? drain_ms : std::nullopt, 0, 0, 0};
  for (auto& call : impl_->calls) {
    if (call.node == node && call.outcome.kind == OutcomeKind::pending && !call.deploy_ms) {
      call.deploy_ms = deploy.at_ms;
    }
  }
  if (deploy.drain_ms) {
    if (auto ok = impl_->drain(node, *deploy.drain_ms, deploy); !ok) return ok;
  }
  impl_->run_until_idle();
  deploy.stopped_ms = impl_->now();
  impl_->cluster->take_down(node, kind);
  impl_->drop_connections(node);
  impl_->run_until_idle();
  impl_->deploys.push_back(deploy);
  return {};
}

Result<void> McpCluster::bring_up(std::size_t node, std::optional<std::string> version_label) {
  if (auto ok = impl_->cluster->bring_up(node, std::move(version_label)); !ok) return ok;
  // As `dorm serve` does before it is ready: the sessions a dead process left calls in
  // run their reaper now, so a client resuming right away finds its error.
  if (impl_->session.reaper) {
    auto woken = actors::reap_at_boot(impl_->cluster->node(node), [](actors::BootReapReport) {});
    if (!woken) return std::move(woken).error();
    impl_->run_until_idle();
  }
  impl_->accepting[node] = true;
  return {};
}

Result<void> McpCluster::restart(std::size_t node, RestartKind kind, std::int64_t downtime_ms,
                                 std::optional<std::string> version_label) {
  if (auto ok = take_down(node, kind); !ok) return ok;
  if (downtime_ms > 0) advance(downtime_ms);
  return bring_up(node, std::move(version_label));
}

Result<void> McpCluster::drain_and_restart(std::size_t node, std::int64_t drain_ms, std::int64_t downtime_ms,
                                           std::optional<std::string> version_label) {
  if (auto ok = take_down(node, RestartKind::graceful, drain_ms); !ok) return ok;
  if (downtime_ms > 0) advance(downtime_ms);
  return bring_up(node, std::move(version_label));
}

VirtualClock& McpCluster::clock() { return impl_->cluster->clock(); }
std::size_t McpCluster::size() const { return impl_->cluster->size(); }
Cluster& McpCluster::cluster() { return *impl_->cluster; }

Result<McpClient> McpCluster::open_session(std::string session_id) {
  auto index = impl_->open_session(std::move(session_id));
  if (!index) return std::move(index).error();
  return McpClient(this, *index);
}

const std::string& McpClient::session_id() const { return cluster_->impl_->clients[index_].session_id; }
std::size_t McpClient::node() const { return cluster_->impl_->clients[index_].node; }
std::size_t McpClient::call(std::string_view name, std::string_view arguments) {
  return cluster_->impl_->start_call(index_, name, arguments);
}

}  // namespace dorm::testing
