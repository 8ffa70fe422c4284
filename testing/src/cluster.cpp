#include "dorm/testing/cluster.hpp"

#include <cstring>
#include <random>

#include "dorm/runtime/errors.hpp"
#include "dorm/storage/memory_backend.hpp"

namespace dorm::testing {

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
  // One secret for every node, so that an id means the same object on all of them.
  std::mt19937_64 rng(options_.runtime.seed);
  secret_.resize(IdCodec::kSecretBytes);
  for (auto& c : secret_) c = static_cast<char>(rng());
  nodes_.resize(options_.nodes);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].backend = options_.make_backend ? options_.make_backend(i)
                                              : std::make_unique<storage::MemoryBackend>();
    nodes_[i].version_label = options_.runtime.version_label;
    (void)start_node(i);
  }
}

Cluster::~Cluster() {
  for (auto& n : nodes_) n.runtime.reset();
}

Result<void> Cluster::start_node(std::size_t i) {
  RuntimeOptions o = options_.runtime;
  o.virtual_clock = &clock_;
  o.virtual_clock_rank = static_cast<int>(i);  // coordinators advance in node order
  o.secret = secret_;
  o.version_label = nodes_[i].version_label;
  o.route = [this, i](const ObjectHandle& to, caf::message& msg, ReplyHandler& reply) {
    if (shard_of(to.id) == i) return false;
    deliver(to, std::move(msg), std::move(reply));
    return true;
  };
  auto rt = Runtime::start(*nodes_[i].backend, std::move(o));
  if (!rt) return std::move(rt).error();
  nodes_[i].runtime = std::move(rt).value();
  if (options_.setup) options_.setup(*nodes_[i].runtime);
  return {};
}

std::size_t Cluster::shard_of(const ObjectId& id) const {
  std::uint64_t h = 0;
  std::memcpy(&h, id.body().data(), sizeof h);  // the body is a hash or random already
  return static_cast<std::size_t>(h % nodes_.size());
}

ObjectId Cluster::id_from_name(std::string_view ns, std::string_view name) const {
  return IdCodec::create(secret_)->from_name(ns, name);
}

void Cluster::deliver(const ObjectHandle& to, caf::message msg, ReplyHandler on_reply) {
  Node& n = nodes_[shard_of(to.id)];
  if (!n.runtime) {
    n.held.push_back(Held{to, std::move(msg), std::move(on_reply)});
    return;
  }
  n.runtime->deliver(to, std::move(msg), std::move(on_reply));
}

void Cluster::take_down(std::size_t i, RestartKind kind) {
  Node& n = nodes_[i];
  if (!n.runtime) return;
  if (kind == RestartKind::crash) {
    n.runtime->crash();
  } else {
    n.runtime->shutdown();
  }
  n.runtime.reset();
}

Result<void> Cluster::bring_up(std::size_t i, std::optional<std::string> version_label) {
  Node& n = nodes_[i];
  if (n.runtime) return {};
  if (version_label) n.version_label = *version_label;
  if (auto ok = start_node(i); !ok) return ok;
  // In order: everything held arrived while the node was down, before anything new.
  auto held = std::move(n.held);
  n.held.clear();
  for (auto& h : held) n.runtime->deliver(h.to, std::move(h.msg), std::move(h.on_reply));
  return {};
}

Result<void> Cluster::restart(std::size_t i, RestartKind kind, std::int64_t downtime_ms,
                              std::optional<std::string> version_label) {
  take_down(i, kind);
  if (downtime_ms > 0) advance(downtime_ms);
  return bring_up(i, std::move(version_label));
}

std::size_t Cluster::run_until_idle() {
  std::size_t total = 0;
  while (true) {
    std::size_t ran = 0;
    for (auto& n : nodes_) {
      if (n.runtime) ran += n.runtime->run_until_idle();
    }
    if (ran == 0) return total;
    total += ran;
  }
}

std::optional<std::int64_t> Cluster::next_timer_ms() {
  std::optional<std::int64_t> next;
  for (auto& n : nodes_) {
    if (!n.runtime) continue;
    if (auto t = n.runtime->next_timer_ms(); t && (!next || *t < *next)) next = t;
  }
  return next;
}

bool Cluster::run_until_next_timer() {
  auto next = next_timer_ms();
  if (!next) return false;
  step_to(*next);
  return true;
}

void Cluster::step_to(std::int64_t at) {
  if (at > clock_.now_ms()) {
    clock_.advance(at - clock_.now_ms());  // moves every node's timers
  } else {
    // Due already (a zero delay): fire them without moving time.
    for (auto& n : nodes_) {
      if (!n.runtime) continue;
      if (auto t = n.runtime->next_timer_ms(); t && *t <= clock_.now_ms()) {
        n.runtime->run_until_next_timer();
      }
    }
  }
  run_until_idle();
}

void Cluster::advance(std::int64_t ms) {
  std::int64_t until = clock_.now_ms() + ms;
  while (true) {
    auto next = next_timer_ms();
    if (!next || *next > until) break;
    step_to(*next);
  }
  if (until > clock_.now_ms()) clock_.advance(until - clock_.now_ms());
  run_until_idle();
}

}  // namespace dorm::testing
