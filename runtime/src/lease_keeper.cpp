#include "lease_keeper.hpp"

#include <caf/all.hpp>

#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"

namespace dorm {

std::variant<std::uint64_t, storage::LeaseHolder, caf::error> Runtime::Impl::take_lease(
    const detail::Activation& act, caf::actor_addr host) {
  std::string object = keys::object_prefix(act.id.ns(), act.id.body());
  const std::int64_t now = clock->now_ms();
  auto grant = leases->acquire(object, options.node.id, now, now + options.node.lease.count());
  if (!grant) {
    return make_error(grant.error().code == ErrorCode::no_space ? RuntimeErrc::no_space
                                                                : RuntimeErrc::turn_failed,
                      "taking the object's lease: " + grant.error().describe());
  }
  if (!grant->granted()) return std::move(*grant->holder);
  std::lock_guard lock(leases_mutex);
  held_leases[&act] = HeldLease{std::move(object), grant->token, std::move(host)};
  return grant->token;
}

std::optional<std::chrono::milliseconds> Runtime::Impl::wait_out(const storage::LeaseHolder& holder) {
  const std::int64_t now = clock->now_ms();
  const auto& node = options.node;
  bool dead = now - holder.heartbeat_ms > 2 * node.renew_every.count();
  if (!dead) {
    std::lock_guard lock(leases_mutex);
    auto it = presumed_dead.find(holder.node);
    if (it != presumed_dead.end()) {
      dead = now < it->second;
      if (!dead) presumed_dead.erase(it);
    }
  }
  if (!dead) return std::nullopt;
  const std::int64_t left = holder.expires_ms - now;
  // A lease far longer than ours is not one to sit out.
  if (left > 2 * node.lease.count()) return std::nullopt;
  return std::chrono::milliseconds(std::max<std::int64_t>(left, 1));
}

void Runtime::presume_dead(std::string_view node_id) {
  auto& impl = *impl_;
  if (!impl.leases || node_id.empty() || node_id == impl.options.node.id) return;
  const std::int64_t until = impl.clock->now_ms() + impl.options.node.lease.count();
  bool news = false;
  {
    std::lock_guard lock(impl.leases_mutex);
    auto [it, added] = impl.presumed_dead.try_emplace(std::string(node_id), until);
    news = added || it->second <= impl.clock->now_ms();
    it->second = until;
  }
  if (news) log::info("node_presumed_dead", {{"node", std::string(node_id)}});
}

void Runtime::hand_over() {
  auto& impl = *impl_;
  if (!impl.leases || impl.handing_over.exchange(true)) return;
  // The live peers, once: a node joining later is found by the clients themselves.
  const std::int64_t now = impl.clock->now_ms();
  std::vector<storage::NodeRecord> peers;
  if (auto nodes = impl.leases->nodes(); nodes) {
    for (auto& n : *nodes) {
      if (n.node == impl.options.node.id || n.address.empty()) continue;
      if (now - n.heartbeat_ms > 2 * impl.options.node.renew_every.count()) continue;
      peers.push_back(std::move(n));
    }
  } else {
    log::warn("hand_over_peers_unknown", {{"error", nodes.error().describe()}});
  }
  std::size_t peer_count = peers.size();
  {
    std::lock_guard lock(impl.leases_mutex);
    impl.peers = std::move(peers);
  }
  std::vector<caf::actor> hosts;
  impl.directory.for_each_shard([&](detail::Directory::Shard& shard) {
    std::lock_guard lock(shard.mutex);
    shard.live.for_each([&](const detail::Activation* act) {
      if (!act->stopping) hosts.push_back(act->actor);
    });
  });
  log::info("hand_over_started", {{"node", impl.options.node.id},
                                  {"active_objects", static_cast<std::int64_t>(hosts.size())},
                                  {"peers", static_cast<std::int64_t>(peer_count)}});
  for (auto& host : hosts) caf::anon_send(host, detail::HandOver{});
}

caf::error Runtime::Impl::handed_over(std::uint64_t hash) {
  std::lock_guard lock(leases_mutex);
  if (peers.empty()) {
    return make_error(RuntimeErrc::node_restarting, "this node is stopping and hands its objects over");
  }
  const auto& peer = peers[hash % peers.size()];
  // Not its owner yet: the peer takes the lease when the message reaches it. The expiry
  // tells a sender that waits rather than sends on (the alarm scheduler) to look again a
  // lease period from now, when this node is gone and the peer delivers.
  return make_not_owner(OwnerInfo{peer.node, peer.address, clock->now_ms() + options.node.lease.count()});
}

void Runtime::Impl::drop_lease(const detail::Activation* act) {
  if (!leases) return;
  HeldLease held;
  {
    std::lock_guard lock(leases_mutex);
    auto it = held_leases.find(act);
    if (it == held_leases.end()) return;
    held = std::move(it->second);
    held_leases.erase(it);
  }
  if (crashed.load()) return;
  if (auto ok = leases->release(held.object, held.token); !ok) {
    // It runs out by itself: the object is only unavailable elsewhere until then.
    log::warn("lease_release_failed", {{"error", ok.error().describe()}});
  }
}

namespace detail {

LeaseKeeper::LeaseKeeper(caf::actor_config& cfg, Runtime::Impl* impl)
    : caf::event_based_actor(cfg), impl_(impl) {}

caf::behavior LeaseKeeper::make_behavior() {
  delayed_send(this, impl_->options.node.renew_every, LeaseTick{});
  return {[this](LeaseTick) {
    tick();
    delayed_send(this, impl_->options.node.renew_every, LeaseTick{});
  }};
}

void LeaseKeeper::tick() {
  if (impl_->crashed.load()) return;
  const auto& node = impl_->options.node;
  const std::int64_t now = impl_->clock->now_ms();
  if (auto ok = impl_->leases->announce({node.id, node.address, now}); !ok) {
    log::warn("node_announce_failed", {{"node", node.id}, {"error", ok.error().describe()}});
  }
  std::vector<storage::HeldLease> held;
  std::unordered_map<std::string, caf::actor_addr> hosts;
  {
    std::lock_guard lock(impl_->leases_mutex);
    held.reserve(impl_->held_leases.size());
    for (const auto& [act, lease] : impl_->held_leases) {
      held.push_back({lease.object, lease.token});
      hosts.emplace(lease.object, lease.host);
    }
  }
  if (held.empty()) return;
  auto lost = impl_->leases->renew(node.id, held, now + node.lease.count());
  if (!lost) {
    log::warn("lease_renewal_failed",
              {{"node", node.id}, {"leases", held.size()}, {"error", lost.error().describe()}});
    return;
  }
  for (const auto& object : *lost) {
    auto it = hosts.find(object);
    if (it == hosts.end()) continue;
    if (auto host = caf::actor_cast<caf::actor>(it->second)) caf::anon_send(host, LeaseLost{});
  }
}

}  // namespace detail
}  // namespace dorm
