#include "dorm/runtime/runtime.hpp"

#include <openssl/rand.h>

#include <atomic>
#include <caf/all.hpp>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"
#include "alarm_scheduler.hpp"
#include "lease_keeper.hpp"
#include "object_host.hpp"

namespace dorm {
namespace {

// The stores that have a live runtime in this process. A store's own lock (RocksDB's LOCK
// file, SQLite's flock) keeps a second process out; this keeps out a second runtime of the
// same process, which would run the same objects beside the first.
std::mutex claims_mutex;
std::set<const storage::Backend*> claimed_stores;

Result<void> claim_store(const storage::Backend& backend) {
  std::lock_guard lock(claims_mutex);
  if (!claimed_stores.insert(&backend).second) {
    return Error{ErrorCode::busy,
                 "another runtime of this process runs on " + backend.describe() +
                     ": a store has one runtime at a time; shut that one down or crash() it "
                     "before starting another"};
  }
  return {};
}

void release_store(const storage::Backend& backend) {
  std::lock_guard lock(claims_mutex);
  claimed_stores.erase(&backend);
}

// Releases the claim when a start fails part way.
struct ClaimGuard {
  const storage::Backend* backend;
  ~ClaimGuard() {
    if (backend) release_store(*backend);
  }
};

// Bounds of NamespaceOptions::uncached_prefixes: every cached read tests each of them.
constexpr std::size_t kMaxUncachedPrefixes = 8;
constexpr std::size_t kMaxUncachedPrefixBytes = 256;

const std::string kSecretKey = keys::meta(keys::kMetaIdSecret);
const std::string kGenerationKey = keys::meta(keys::kMetaGeneration);
const std::string kCleanShutdownKey = keys::meta(keys::kMetaCleanShutdown);
const std::string kVersionLabelKey = keys::meta(keys::kMetaVersionLabel);

// How long a node waits for another node that is writing the id secret: 200 x 50 ms.
constexpr int kSecretWaitRounds = 200;
constexpr std::chrono::milliseconds kSecretWaitEvery{50};

// `leases`: a scale-out node's (of node `node`, at `now_ms`), or null.
Result<std::string> load_secret(storage::Backend& backend, const std::string& file,
                                const std::string& given, storage::LeaseTable* leases,
                                const std::string& node, std::int64_t now_ms) {
  if (!given.empty()) {
    if (given.size() != IdCodec::kSecretBytes) {
      return Error{ErrorCode::invalid_argument,
                   "RuntimeOptions::secret must be " + std::to_string(IdCodec::kSecretBytes) +
                       " bytes, it is " + std::to_string(given.size())};
    }
    return given;
  }
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{ErrorCode::invalid_argument, "cannot read secret file '" + file + "'"};
    std::string secret{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (secret.size() != IdCodec::kSecretBytes) {
      return Error{ErrorCode::invalid_argument,
                   "secret file '" + file + "' must hold exactly " +
                       std::to_string(IdCodec::kSecretBytes) + " bytes, it holds " +
                       std::to_string(secret.size())};
    }
    return secret;
  }
  auto stored = backend.get(kSecretKey);
  if (!stored) return std::move(stored).error();
  if (*stored) return std::move(**stored);
  // First open of this store: mint the secret that every id will carry a MAC under.
  std::string secret(IdCodec::kSecretBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), static_cast<int>(secret.size())) != 1) {
    return Error{ErrorCode::internal, "RAND_bytes failed to produce the id secret"};
  }
  storage::WriteBatch batch;
  batch.put(kSecretKey, secret);
  if (!leases) {
    if (auto ok = backend.commit(batch); !ok) return std::move(ok).error();
    return secret;
  }
  // Nodes starting together must agree on one secret: it is written under a lease of its
  // key, and a node that finds the lease taken or the secret written reads it instead.
  // The holder writes it with one commit, so a node that finds the lease taken polls for
  // the secret for a while (bounded) before it gives up.
  auto grant = leases->acquire(kSecretKey, node, now_ms, now_ms + 60'000);
  for (int round = 0; grant && !grant->granted(); ++round) {
    if (round == kSecretWaitRounds) {
      return Error{ErrorCode::busy, "node " + grant->holder->node +
                                        " is creating the store's id secret and has not "
                                        "written it: start this node again in a moment, or "
                                        "give every node the same secret file"};
    }
    std::this_thread::sleep_for(kSecretWaitEvery);
    auto written = backend.get(kSecretKey);
    if (!written) return std::move(written).error();
    if (*written) return std::move(**written);
    grant = leases->acquire(kSecretKey, node, now_ms, now_ms + 60'000);
  }
  if (!grant) return std::move(grant).error();
  auto again = backend.get(kSecretKey);
  Result<void> written;
  if (again && !*again) written = backend.commit_leased(batch, kSecretKey, grant->token);
  (void)leases->release(kSecretKey, grant->token);
  if (!again) return std::move(again).error();
  if (*again) return std::move(**again);
  if (!written) return std::move(written).error();
  return secret;
}

struct Start {
  std::uint64_t generation;
  StartReason kind;
};

// Bumps the durable generation and tells how the previous runtime over this store ended:
// it left a clean-shutdown marker (after_shutdown) or not (after_crash), or ran another
// version (after_redeploy). The marker is cleared in the same batch, so a crash of this
// runtime is seen as one by the next.
//
// A scale-out node keeps these per node (`suffix` "/<node id>"): how *it* ended last time.
Result<Start> begin_generation(storage::Backend& backend, const std::string& label,
                               const std::string& suffix) {
  std::vector<std::string> keys{kGenerationKey + suffix, kCleanShutdownKey + suffix,
                                kVersionLabelKey + suffix};
  auto stored = backend.get_many(keys);
  if (!stored) return std::move(stored).error();
  std::uint64_t generation = 0;
  if (auto& g = (*stored)[0]) {
    auto [end, ec] = std::from_chars(g->data(), g->data() + g->size(), generation);
    if (ec != std::errc{} || end != g->data() + g->size()) {
      return Error{ErrorCode::corruption, "stored generation '" + *g + "' is not a number"};
    }
  }
  StartReason kind = StartReason::first;
  if (generation > 0) {
    std::string previous_label = (*stored)[2].value_or("");
    if (previous_label != label) {
      kind = StartReason::after_redeploy;
    } else if ((*stored)[1]) {
      kind = StartReason::after_shutdown;
    } else {
      kind = StartReason::after_crash;
    }
  }
  ++generation;
  storage::WriteBatch batch;
  batch.put(keys[0], std::to_string(generation));
  batch.del(keys[1]);
  batch.put(keys[2], label);
  if (auto ok = backend.commit(batch); !ok) return std::move(ok).error();
  return Start{generation, kind};
}

// The store's generation as a runtime that owned it alone left it (0 if none ever did):
// scale-out nodes never bump it, and number their activations above it.
Result<std::uint64_t> stored_generation(storage::Backend& backend) {
  auto g = backend.get(kGenerationKey);
  if (!g) return std::move(g).error();
  std::uint64_t generation = 0;
  if (*g) {
    const auto& text = **g;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), generation);
    if (ec != std::errc{} || end != text.data() + text.size()) {
      return Error{ErrorCode::corruption, "stored generation '" + text + "' is not a number"};
    }
  }
  return generation;
}

// Checks a scale-out node's settings against its store; the store's leases.
Result<storage::LeaseTable*> node_leases(storage::Backend& backend, const RuntimeOptions::Node& node) {
  if (!keys::valid_name(node.id)) {
    return Error{ErrorCode::invalid_argument,
                 "node id '" + node.id + "' must be 1 to 64 characters from [a-z0-9._-]"};
  }
  if (node.lease.count() <= 0 || node.renew_every.count() <= 0 ||
      node.renew_every >= node.lease) {
    return Error{ErrorCode::invalid_argument,
                 "a node's leases must last longer than its renewal period (lease " +
                     std::to_string(node.lease.count()) + " ms, renewed every " +
                     std::to_string(node.renew_every.count()) + " ms)"};
  }
  auto* leases = backend.leases();
  if (!leases) {
    return Error{ErrorCode::invalid_argument,
                 "node " + node.id + ": " + backend.describe() +
                     " has no leases, so it cannot be served by several nodes (open a "
                     "PostgreSQL store with shared=true)"};
  }
  return leases;
}

}  // namespace

void apply_blocking_idle_wait(caf::actor_system_config& config) {
  // After the aggressive spin (CAF's 100 polls), straight to the blocking wait: a worker
  // blocked there is woken by the next enqueue for it.
  config.set("work-stealing.moderate-poll-attempts", std::size_t{0});
}

caf::scheduler::test_coordinator* Runtime::Impl::coordinator() const {
  if (!options.virtual_clock) return nullptr;
  return dynamic_cast<caf::scheduler::test_coordinator*>(&system->scheduler());
}

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) { impl_->self = this; }

Result<std::unique_ptr<Runtime>> Runtime::start(storage::Backend& backend, RuntimeOptions options) {
  // Before anything is read or written: the loser of two starts changes nothing. Nodes of
  // a shared store keep each other off its objects with leases instead.
  const bool node = !options.node.id.empty();
  storage::LeaseTable* leases = nullptr;
  if (node) {
    auto checked = node_leases(backend, options.node);
    if (!checked) return std::move(checked).error();
    leases = *checked;
  } else if (auto claimed = claim_store(backend); !claimed) {
    return std::move(claimed).error();
  }
  ClaimGuard claim{node ? nullptr : &backend};
  auto impl = std::make_unique<Impl>(backend, std::move(options));
  Impl& rt = *impl;
  rt.clock = rt.options.virtual_clock ? rt.options.virtual_clock
             : rt.options.clock       ? rt.options.clock
                                      : &rt.system_clock;
  auto secret = load_secret(rt.backend, rt.options.secret_file, rt.options.secret, leases,
                            rt.options.node.id, rt.clock->now_ms());
  if (!secret) return std::move(secret).error();
  auto codec = IdCodec::create(*secret);
  if (!codec) return std::move(codec).error();
  rt.ids.emplace(std::move(codec).value());
  auto begun = begin_generation(rt.backend, rt.options.version_label,
                                node ? "/" + rt.options.node.id : std::string());
  if (!begun) return std::move(begun).error();
  rt.generation = begun->generation;
  rt.start_kind = begun->kind;
  if (node) {
    auto floor = stored_generation(rt.backend);
    if (!floor) return std::move(floor).error();
    rt.generation = *floor;
    rt.leases = leases;
    const auto& n = rt.options.node;
    if (auto ok = leases->announce({n.id, n.address, rt.clock->now_ms()}); !ok) {
      return std::move(ok).error();
    }
  }

  rt.config = std::make_unique<caf::actor_system_config>();
  if (rt.options.virtual_clock) {
    rt.config->set("scheduler.policy", caf::atom("testing"));
  } else if (rt.options.workers > 0) {
    rt.config->set("scheduler.max-threads", rt.options.workers);
  }
  if (!rt.options.poll_when_idle) apply_blocking_idle_wait(*rt.config);
  rt.config->add_error_category(caf::atom("dorm"), render_runtime_error);
  rt.system = std::make_unique<caf::actor_system>(*rt.config);
  rt.posts = std::make_shared<detail::PostBox>(rt.options.virtual_clock != nullptr);
  rt.started_ms = rt.clock->now_ms();
  if (auto* clock = rt.options.virtual_clock) {
    Impl* raw = &rt;
    rt.clock_subscription = clock->subscribe(
        [raw](std::int64_t ms) { raw->coordinator()->advance_time(std::chrono::milliseconds(ms)); },
        rt.options.virtual_clock_rank);
  }
  auto runtime = std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
  runtime->impl_->alarm_scheduler =
      runtime->impl_->system->spawn<detail::AlarmScheduler>(runtime.get(), runtime->impl_.get());
  if (node) {
    runtime->impl_->lease_keeper =
        runtime->impl_->system->spawn<detail::LeaseKeeper>(runtime->impl_.get());
  }
  // On virtual time, start means started: the scheduler has read the alarm index (and
  // released whatever was due) before start() returns.
  runtime->run_until_idle();
  claim.backend = nullptr;  // held until shutdown() or crash()
  return runtime;
}

Runtime::~Runtime() {
  if (!impl_->stopped) shutdown();
}

void Runtime::shutdown() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  // The scheduler first, so that no alarm delivery starts while objects stop.
  caf::anon_send_exit(impl_->alarm_scheduler, caf::exit_reason::user_shutdown);
  impl_->alarm_scheduler = nullptr;
  if (impl_->lease_keeper) {
    caf::anon_send_exit(impl_->lease_keeper, caf::exit_reason::user_shutdown);
    impl_->lease_keeper = nullptr;
  }
  auto active = impl_->stop_admitting();
  for (auto& act : active) caf::anon_send(act->actor, detail::StopRequest{StopReason::shutdown});
  active.clear();
  if (impl_->coordinator()) run_until_idle();
  if (impl_->options.virtual_clock) impl_->options.virtual_clock->unsubscribe(impl_->clock_subscription);
  // Posts made while objects stop are dropped; none may reach a system being destroyed.
  impl_->posts->close();
  impl_->system.reset();  // waits for every actor to finish its on_stop
  impl_->forget_all();
  // Last: the marker says every object got its on_stop and committed.
  const std::string suffix = impl_->leases ? "/" + impl_->options.node.id : std::string();
  storage::WriteBatch marker;
  marker.put(kCleanShutdownKey + suffix, std::to_string(impl_->generation));
  if (auto ok = impl_->backend.commit(marker); !ok) {
    log::error("clean_shutdown_marker_failed", {{"error", ok.error().describe()}});
  }
  if (impl_->leases) {
    // Every activation released its lease as it stopped; the node leaves the registry.
    if (auto ok = impl_->leases->retire(impl_->options.node.id); !ok) {
      log::warn("node_retire_failed", {{"error", ok.error().describe()}});
    }
  } else {
    release_store(impl_->store);
  }
}

void Runtime::crash() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  // Fence first: from here on nothing this runtime does reaches the store, and another
  // runtime may start on it.
  impl_->backend.fence();
  if (!impl_->leases) release_store(impl_->store);
  // Requests that die with this runtime tell their senders so.
  impl_->drop_reason->store(RuntimeErrc::node_restarting);
  impl_->crashed.store(true);
  std::vector<caf::actor> actors;
  for (auto& act : impl_->stop_admitting()) actors.push_back(act->actor);
  actors.push_back(impl_->alarm_scheduler);
  impl_->alarm_scheduler = nullptr;
  if (impl_->lease_keeper) actors.push_back(impl_->lease_keeper);
  impl_->lease_keeper = nullptr;
  for (auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::kill);
  actors.clear();
  if (impl_->coordinator()) run_until_idle();
  if (impl_->options.virtual_clock) impl_->options.virtual_clock->unsubscribe(impl_->clock_subscription);
  impl_->posts->close();
  impl_->system.reset();
  impl_->forget_all();
}

StartReason Runtime::start_kind() const { return impl_->start_kind; }

Result<void> Runtime::register_namespace(std::string_view ns, ObjectFactory factory,
                                         NamespaceOptions options) {
  if (!keys::valid_name(ns)) {
    return Error{ErrorCode::invalid_argument,
                 "invalid namespace name '" + std::string(ns) + "': use 1-64 of [a-z0-9._-]"};
  }
  if (options.uncached_prefixes.size() > kMaxUncachedPrefixes) {
    return Error{ErrorCode::invalid_argument,
                 "namespace '" + std::string(ns) + "': at most " +
                     std::to_string(kMaxUncachedPrefixes) + " uncached prefixes"};
  }
  std::vector<std::string> cache_uncached;
  for (const auto& prefix : options.uncached_prefixes) {
    if (prefix.empty() || prefix.size() > kMaxUncachedPrefixBytes) {
      return Error{ErrorCode::invalid_argument,
                   "namespace '" + std::string(ns) + "': an uncached prefix must be 1 to " +
                       std::to_string(kMaxUncachedPrefixBytes) +
                       " bytes (storage_cache_bytes = 0 turns the cache off)"};
    }
    cache_uncached.push_back(keys::kObjectData + prefix);
  }
  std::unique_lock lock(impl_->namespaces_mutex);
  auto [it, added] = impl_->namespaces.emplace(
      std::string(ns),
      Impl::Namespace{std::move(factory), options, UncachedPrefixes(std::move(cache_uncached))});
  if (!added) {
    return Error{ErrorCode::invalid_argument, "namespace '" + std::string(ns) + "' is already registered"};
  }
  auto& entry = it->second;
  entry.object_settings.emplace(detail::ObjectSettings{impl_.get(), impl_->backend, impl_->options.limits,
                                                       options.storage_cache_bytes,
                                                       &entry.cache_uncached, options.idle_timeout});
  const bool alarms_held = impl_->alarms_held.load() > 0;
  lock.unlock();
  // Alarms of it that came due were held back, not failed (alarm_scheduler.cpp).
  if (alarms_held) caf::anon_send(impl_->alarm_scheduler, detail::NamespaceAdded{std::string(ns)});
  return {};
}

ObjectId Runtime::id_from_name(std::string_view ns, std::string_view name) const {
  return impl_->ids->from_name(ns, name);
}

std::string Runtime::derive_key(std::string_view purpose) const { return impl_->ids->derive_key(purpose); }

Result<ObjectId> Runtime::new_unique_id(std::string_view ns) const {
  return impl_->ids->new_unique(ns);
}

Result<ObjectId> Runtime::parse_id(std::string_view ns, std::string_view text) const {
  return impl_->ids->parse(ns, text);
}

Result<ObjectHandle> Runtime::get(const ObjectId& id) const {
  std::shared_lock lock(impl_->namespaces_mutex);
  if (!impl_->namespaces.count(id.ns())) {
    return Error{ErrorCode::not_found, "no namespace '" + id.ns() + "' is registered"};
  }
  return ObjectHandle{id};
}

void Runtime::deliver(const ObjectHandle& to, caf::message msg, ReplyHandler on_reply,
                      std::optional<trace::TraceContext> trace) {
  if (impl_->options.route && impl_->options.route(to, msg, on_reply)) return;
  detail::Envelope env{std::move(msg),
                       on_reply ? std::make_shared<detail::ReplySink>(std::move(on_reply),
                                                                      impl_->drop_reason)
                                : nullptr,
                       std::move(trace)};
  auto admission = impl_->admit(to.id, env);
  if (admission.refused) {
    if (env.reply) {
      env.reply->deliver(std::move(admission.refused));
    } else {
      log::warn("message_dropped", {{"ns", to.id.ns()},
                                    {"id", to.id.to_string()},
                                    {"reason", describe(admission.refused)}});
    }
  }
  for (auto& v : admission.victims) caf::anon_send(v, detail::StopRequest{StopReason::budget});
}

Result<std::vector<storage::KeyValue>> Runtime::scan_index(std::string_view name,
                                                           std::string_view start,
                                                           std::size_t limit) const {
  if (!keys::valid_name(name)) {
    return Error{ErrorCode::invalid_argument, "invalid index name '" + std::string(name) + "'"};
  }
  std::string prefix = keys::index_prefix(name);
  storage::ScanOptions scan;
  scan.start = prefix + std::string(start);
  scan.end = storage::ScanOptions::prefix_successor(prefix);
  scan.limit = limit;
  auto rows = impl_->backend.scan(scan);
  if (!rows) return std::move(rows).error();
  for (auto& kv : *rows) kv.key.erase(0, prefix.size());
  return rows;
}

std::uint64_t Runtime::generation() const { return impl_->generation; }

std::size_t Runtime::active_objects() const { return impl_->live_count.load(); }

RuntimeStats Runtime::stats() const {
  RuntimeStats out;
  {
    std::shared_lock lock(impl_->namespaces_mutex);
    out.namespaces.reserve(impl_->namespaces.size());
    for (const auto& [name, ns] : impl_->namespaces) {
      const auto& c = *ns.counters;
      auto ended = [&c](Impl::EndCause cause) {
        return c.ended[static_cast<std::size_t>(cause)].load(std::memory_order_relaxed);
      };
      RuntimeStats::Namespace n;
      n.name = name;
      n.activations = c.activations.load(std::memory_order_relaxed);
      n.resident = c.resident.load(std::memory_order_relaxed);
      n.stopped_idle = ended(Impl::EndCause::idle);
      n.stopped_budget = ended(Impl::EndCause::budget);
      n.stopped_drain = ended(Impl::EndCause::drain);
      n.stopped_shutdown = ended(Impl::EndCause::shutdown);
      n.resets = ended(Impl::EndCause::reset);
      out.namespaces.push_back(std::move(n));
    }
  }
  out.turn_latency = impl_->turn_latency.snapshot();
  out.alarms_set = impl_->alarms_set.load(std::memory_order_relaxed);
  out.alarms_removed = impl_->alarms_removed.load(std::memory_order_relaxed);
  out.alarms_late = impl_->alarms_late.load(std::memory_order_relaxed);
  return out;
}

std::size_t Runtime::remembered_ids() const {
  std::size_t n = 0;
  impl_->directory.for_each_shard([&n](detail::Directory::Shard& shard) {
    std::lock_guard lock(shard.mutex);
    n += shard.evicted.size() + shard.next_start.size();
  });
  return n;
}

const Clock& Runtime::clock() const { return *impl_->clock; }
storage::Backend& Runtime::backend() const { return impl_->backend; }
caf::actor_system& Runtime::system() { return *impl_->system; }

std::optional<std::int64_t> Runtime::next_timer_ms() {
  auto* coordinator = impl_->coordinator();
  if (!coordinator) return std::nullopt;
  auto& clock = coordinator->clock();
  if (clock.schedule().empty()) return std::nullopt;
  auto delta = clock.schedule().begin()->first - clock.now();
  return impl_->clock->now_ms() +
         std::max<std::int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(delta).count());
}

bool Runtime::run_until_next_timer() {
  auto at = next_timer_ms();
  if (!at) return false;
  std::int64_t delta = *at - impl_->clock->now_ms();
  if (delta > 0) {
    impl_->options.virtual_clock->advance(delta);
  } else {
    impl_->coordinator()->trigger_timeouts();
  }
  run_until_idle();
  return true;
}

std::size_t Runtime::run_until_idle() {
  auto* coordinator = impl_->coordinator();
  if (!coordinator) return 0;
  std::size_t total = 0;
  for (;;) {
    std::size_t posted = impl_->posts->deliver_queued();
    std::size_t n = coordinator->run();
    total += n;
    if (n == 0 && posted == 0) return total;
  }
}

bool Runtime::wait_for_posts(std::chrono::milliseconds timeout) {
  if (!impl_->coordinator()) return false;
  return impl_->posts->wait(timeout);
}

namespace detail {

void PostBox::post(const caf::actor_addr& target, std::function<void()> fn) {
  std::unique_lock lock(mutex);
  if (closed) return;
  if (deferred) {
    queued.emplace_back(target, std::move(fn));
    arrived.notify_all();
    return;
  }
  // Sent under the lock, so close() cannot let the actor system go while a send is made.
  if (auto actor = caf::actor_cast<caf::actor>(target)) caf::anon_send(actor, PostedTurn{std::move(fn)});
}

std::size_t PostBox::deliver_queued() {
  decltype(queued) batch;
  {
    std::lock_guard lock(mutex);
    if (closed) return 0;
    batch.swap(queued);
  }
  for (auto& [target, fn] : batch) {
    if (auto actor = caf::actor_cast<caf::actor>(target)) caf::anon_send(actor, PostedTurn{std::move(fn)});
  }
  return batch.size();
}

bool PostBox::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex);
  return arrived.wait_for(lock, timeout, [this] { return closed || !queued.empty(); }) && !closed;
}

void PostBox::close() {
  decltype(queued) dropped;
  {
    std::lock_guard lock(mutex);
    closed = true;
    dropped.swap(queued);
  }
  arrived.notify_all();
}

}  // namespace detail

}  // namespace dorm
