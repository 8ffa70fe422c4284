// Admission: where each message to an object goes, and how activations come and go in the
// directory (directory.hpp). Lock order: the wide lock (resident budget only), then one
// shard lock. Under them a message is sent to its live activation and an actor may be
// spawned (both only queue work for CAF's workers); refusals are answered, a successor's
// parked messages sent and budget victims stopped after they are released.
#include <caf/all.hpp>

#include "dorm/runtime/log.hpp"
#include "object_host.hpp"
#include "runtime_impl.hpp"

namespace dorm {
namespace {

// Process-wide: every activation in any runtime of this process gets a larger number, so a
// wake or a reset always has a newer epoch than what came before it.
std::atomic<std::uint64_t> activation_counter{0};

}  // namespace

std::unique_lock<std::mutex> Runtime::Impl::wide_lock() {
  if (options.resident_budget == 0) return {};
  return std::unique_lock(wide_mutex);
}

detail::Activation* Runtime::Impl::spawn_locked(detail::Directory::Shard& shard, std::uint64_t hash,
                                                const ObjectId& id, caf::error& failure,
                                                const std::optional<trace::TraceContext>& cause) {
  const Namespace* ns = nullptr;
  {
    std::shared_lock lock(namespaces_mutex);
    auto it = namespaces.find(id.ns());
    if (it != namespaces.end()) ns = &it->second;  // a map node: stable once registered
  }
  if (!ns) {
    failure = make_error(RuntimeErrc::unknown_namespace, "no namespace '" + id.ns() + "'");
    return nullptr;
  }
  if (handing_over.load()) {
    failure = handed_over(hash);
    return nullptr;
  }
  auto object = ns->factory();
  if (!object) {
    failure = make_error(RuntimeErrc::turn_failed, "namespace '" + id.ns() + "' made no object");
    return nullptr;
  }
  StartReason reason = start_kind;
  if (auto it = shard.next_start.find(id); it != shard.next_start.end()) {
    reason = it->second;
    shard.next_start.erase(it);
  } else if (shard.evicted.contains(hash)) {
    reason = StartReason::wake;
  }
  Epoch epoch{generation, activation_counter.fetch_add(1) + 1};
  detail::ActivationRef act(new detail::Activation(id, hash));
  // Spawned under the shard lock: a second sender for the same id finds this activation,
  // never a second one. Its messages queue until on_start has run.
  act->actor = system->spawn<detail::ObjectHost>(act, std::move(object), reason, epoch,
                                                 *ns->object_settings, cause);
  auto* raw = act.get();
  if (options.resident_budget > 0) lru.push_front(raw);
  shard.live.insert(std::move(act));
  live_count.fetch_add(1);
  ns->counters->activations.fetch_add(1, std::memory_order_relaxed);
  ns->counters->resident.fetch_add(1, std::memory_order_relaxed);
  return raw;
}

std::vector<caf::actor> Runtime::Impl::pick_victims_locked() {
  std::vector<caf::actor> victims;
  std::size_t budget = options.resident_budget;
  if (budget == 0) return victims;
  std::size_t resident = live_count.load() - stopping_count.load();
  if (resident <= budget) return victims;
  std::size_t excess = resident - budget;
  // Least recently used first; skip the busy and the leased. The wide lock keeps every
  // shard's state still meanwhile.
  for (auto* act = lru.oldest(); act && victims.size() < excess; act = act->lru_prev) {
    if (act->stopping || act->accepted.load() > 0 || act->leases.load() > 0) continue;
    act->stopping = true;
    stopping_count.fetch_add(1);
    victims.push_back(act->actor);
  }
  if (victims.size() < excess) {
    log::warn("budget_exceeded",
              {{"resident", resident}, {"budget", budget}, {"evictable", victims.size()}});
  }
  return victims;
}

Runtime::Impl::Admission Runtime::Impl::admit(const ObjectId& id, detail::Envelope& env) {
  Admission out;
  const std::uint64_t hash = detail::Directory::hash(id);
  auto& shard = directory.shard(hash);
  auto wide = wide_lock();
  std::lock_guard lock(shard.mutex);
  if (stopping.load()) {
    out.refused = make_error(RuntimeErrc::stopped, "the runtime is shutting down");
    return out;
  }
  detail::Activation* act = shard.live.find(hash, id);
  bool fresh = false;
  if (!act) {
    act = spawn_locked(shard, hash, id, out.refused, env.trace);
    if (!act) return out;
    fresh = true;
  }
  auto bound = options.mailbox_bound;
  if (act->stopping) {
    // Its successor takes these, in order, once it has stopped.
    if (!act->parked) act->parked = std::make_unique<std::vector<detail::Envelope>>();
    if (act->parked->size() >= bound) {
      out.refused = make_error(RuntimeErrc::overloaded,
                               "mailbox of " + id.ns() + "/" + id.to_string() + " is full");
      return out;
    }
    act->parked->push_back(std::move(env));
    return out;
  }
  if (act->accepted.load() >= bound) {
    out.refused =
        make_error(RuntimeErrc::overloaded, "mailbox of " + id.ns() + "/" + id.to_string() +
                                                " holds " + std::to_string(bound) + " messages");
    return out;
  }
  act->accepted.fetch_add(1);
  // Sent from here, under the shard lock, through the directory's own handle: copying the
  // handle out would touch the actor's reference count, one more cache line per message.
  // The reply sink outlives the lock (out.sink), so that if this send dropped the envelope
  // (an actor that died without leaving the directory: never in the protocol above) its
  // answer, which may send again, runs outside it.
  out.sink = env.reply;
  caf::anon_send(act->actor, std::move(env));
  if (options.resident_budget > 0) {
    lru.move_to_front(act);
    // After counting this message: the new activation is busy, so never its own victim.
    if (fresh) out.victims = pick_victims_locked();
  }
  return out;
}

bool Runtime::Impl::try_begin_stop(detail::Activation* act) {
  auto wide = wide_lock();
  std::lock_guard lock(directory.shard(act->hash).mutex);
  if (act->stopping || act->accepted.load() > 0 || act->leases.load() > 0) return false;
  act->stopping = true;
  stopping_count.fetch_add(1);
  return true;
}

bool Runtime::Impl::try_begin_dispose(detail::Activation* act) {
  auto wide = wide_lock();
  std::lock_guard lock(directory.shard(act->hash).mutex);
  // Leases do not count: the object itself decided to go. Accepted messages do.
  if (act->stopping || act->accepted.load() > 0) return false;
  act->stopping = true;
  stopping_count.fetch_add(1);
  return true;
}

// Called by the activation's own host, which holds a reference to `act` throughout.
Runtime::Impl::NamespaceCounters* Runtime::Impl::counters_of(std::string_view ns) const {
  std::shared_lock lock(namespaces_mutex);
  auto it = namespaces.find(ns);
  return it == namespaces.end() ? nullptr : it->second.counters.get();
}

void Runtime::Impl::end(detail::Activation* act, StartReason next, EndCause cause, bool remember) {
  // Released before the directory lets a successor start, here or on another node.
  drop_lease(act);
  std::unique_ptr<std::vector<detail::Envelope>> parked;
  caf::actor successor;
  caf::error parked_refusal;
  std::vector<caf::actor> victims;
  {
    auto wide = wide_lock();
    auto& shard = directory.shard(act->hash);
    std::lock_guard lock(shard.mutex);
    if (shard.live.find(act->hash, act->id) != act) return;
    if (act->stopping) stopping_count.fetch_sub(1);
    if (options.resident_budget > 0) lru.erase(act);
    parked = std::move(act->parked);
    shard.live.erase(act);
    live_count.fetch_sub(1);
    if (auto* counters = counters_of(act->id.ns())) {
      counters->resident.fetch_sub(1, std::memory_order_relaxed);
      counters->ended[static_cast<std::size_t>(cause)].fetch_add(1, std::memory_order_relaxed);
    }
    if (next == StartReason::after_reset) {
      shard.next_start[act->id] = next;
    } else if (remember) {
      shard.evicted.insert(act->hash);
    }
    if (parked && !parked->empty() && !stopping.load()) {
      caf::error failure;
      auto* fresh = spawn_locked(shard, act->hash, act->id, failure, parked->front().trace);
      if (fresh) {
        fresh->accepted.fetch_add(static_cast<std::uint32_t>(parked->size()));
        successor = fresh->actor;
        if (options.resident_budget > 0) victims = pick_victims_locked();
      } else {
        parked_refusal = std::move(failure);
      }
    }
  }
  // Outside the locks: a refused envelope is answered with why.
  if (successor) {
    for (auto& env : *parked) caf::anon_send(successor, std::move(env));
  } else if (parked_refusal) {
    for (auto& env : *parked) {
      if (env.reply) env.reply->deliver(parked_refusal);
    }
  }
  for (auto& v : victims) caf::anon_send(v, detail::StopRequest{StopReason::budget});
}

std::vector<detail::ActivationRef> Runtime::Impl::stop_admitting() {
  std::vector<detail::ActivationRef> all;
  stopping.store(true);
  auto wide = wide_lock();
  directory.for_each_shard([&](detail::Directory::Shard& shard) {
    std::lock_guard lock(shard.mutex);
    shard.live.for_each(
        [&](detail::Activation* act) { all.emplace_back(act); });
  });
  return all;
}

void Runtime::Impl::forget_all() {
  directory.for_each_shard([](detail::Directory::Shard& shard) {
    std::lock_guard lock(shard.mutex);
    shard.live.clear();
  });
  lru = detail::Lru{};
  live_count.store(0);
}

}  // namespace dorm
