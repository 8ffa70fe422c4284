// Runtime — hosts durable objects on one CAF actor system over one storage backend.
//
// A runtime is given a Backend (which outlives it: a later runtime may start over the same
// backend in the same process) and a set of namespaces, each with the class of object it
// holds. It mints and checks ids, activates objects on their first message (exactly one
// activation per id at a time, through a directory that senders consult under a lock, not
// a central actor), bounds each object's mailbox, and keeps process-wide indexes that
// turns write in their own batches and anyone may scan without activating an object.
//
// On a VirtualClock the runtime uses CAF's deterministic test scheduler: nothing runs
// until run_until_idle(), and VirtualClock::advance() moves CAF's timers along. Such a
// runtime must only be used from one thread.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/duration_histogram.hpp"
#include "dorm/result.hpp"
#include "dorm/runtime/clock.hpp"
#include "dorm/runtime/durable_object.hpp"
#include "dorm/runtime/object_id.hpp"
#include "dorm/runtime/tracing.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm {

// Per-object storage limits. The defaults follow Cloudflare Durable Objects: a key fits in
// a request line, a value in a comfortable message, a turn's batch in one backend commit.
struct StorageLimits {
  std::size_t max_key_bytes = 2048;
  std::size_t max_value_bytes = 128 * 1024;
  std::size_t max_batch_entries = 10'000;
  std::size_t max_batch_bytes = 16 * 1024 * 1024;
};

using ReplyHandler = std::function<void(caf::expected<caf::message>)>;

// The scheduler settings behind RuntimeOptions::poll_when_idle = false, for a program that
// sets up an actor system of its own to compare with (dorm bench runtime's bare CAF).
void apply_blocking_idle_wait(caf::actor_system_config& config);

struct RuntimeOptions {
  // Durable time. Null: the system clock.
  const Clock* clock = nullptr;
  // Set for deterministic tests: the runtime runs on CAF's test scheduler driven by this
  // clock (which then is also the durable clock).
  VirtualClock* virtual_clock = nullptr;
  // Where this runtime is told of a clock advance among the clock's subscribers (lower
  // first); a Cluster uses the node index.
  int virtual_clock_rank = 0;
  // CAF worker threads; 0 picks CAF's default (one per core). Turns are synchronous, so a
  // slow turn occupies a worker: size this for the storage latency you expect.
  std::size_t workers = 0;
  // How an idle worker waits for work. By default it spins briefly and then blocks until
  // work is enqueued for it, checking busy workers' queues every 10 ms. CAF's own policy
  // (true here) sleeps 50 us at a time for up to 25 ms before it blocks, and a message sent
  // to a worker in those sleeps waits for the sleep to end: on 2 cores a tools/call at
  // concurrency 1 took ~30 % longer at p50 (docs/benchmarks.md, "Idle CAF workers").
  bool poll_when_idle = false;
  // Messages an object may have accepted and not finished; more are refused with
  // `overloaded` (CAF's own mailboxes are unbounded).
  std::size_t mailbox_bound = 1024;
  StorageLimits limits;
  // A turn that takes this long or longer logs `slow_turn` (timed on the coarse monotonic
  // clock, whose resolution is a few milliseconds: 0 logs every turn).
  std::chrono::milliseconds slow_turn{100};
  // Most activations resident at once, across namespaces (0 = no limit). Over it, the
  // least recently used idle ones stop with on_stop(budget); leased ones never do.
  std::size_t resident_budget = 0;
  // This deployment's version: a start with a label other than the previous start's is a
  // redeploy (on_start(after_redeploy)).
  std::string version_label;
  // A 32-byte secret for ids from this file instead of the one kept in the backend.
  std::string secret_file;
  // Or the 32 secret bytes themselves (several runtimes that must agree on ids, such as
  // the nodes of a testing::Cluster, share one).
  std::string secret;
  // When set, every message (from outside or from an object) is first offered here; if it
  // returns true it took the message elsewhere (testing::Cluster routes other shards'
  // messages to their node this way) and this runtime does not deliver it.
  std::function<bool(const ObjectHandle&, caf::message&, ReplyHandler&)> route;
  // Seeds the runtime's RNG (alarm retry jitter, simulation). Same seed, same schedule.
  std::uint64_t seed = 0x5eed;
  // Alarms that came due before this runtime started are released at this many per
  // second (0 = all at once).
  double overdue_alarm_rate = 200;
  // How many of the earliest pending alarms the alarm scheduler holds in memory (at least
  // 1; under 200 bytes each). Setting, moving and deleting alarms then reads no storage;
  // the rest of the index is read, this many at a time, when the earliest alarm beyond
  // them may come due.
  std::size_t alarm_window = 1024;
  // Receives the runtime's spans (activation, alarm delivery, reset); null = no tracing.
  // Must outlive the runtime.
  trace::Tracer* tracer = nullptr;
  // Scale-out (docs/scale-out.md): this runtime as one node of several that serve one
  // store together. Set `id` to run so; the store must have leases (Backend::leases():
  // PostgreSQL opened with shared=true, or one memory: store shared by runtimes of a
  // process), and every node must be given the same id secret (`secret` or `secret_file`)
  // unless the store already keeps one. Each activation first takes its object's lease; a
  // message for an object another node holds is answered with not_owner, naming the node
  // (owner_of); each of the object's commits is checked against its lease token, and its
  // epoch's generation is derived from the token, so a later activation anywhere is newer.
  // An activation that ends releases its lease; a crashed node's leases run out.
  struct Node {
    std::string id;       // unique among the nodes of the store; empty: not scale-out
    std::string address;  // announced to the other nodes (where to send its objects' work)
    std::chrono::milliseconds lease{10'000};       // how long a lease lasts unless renewed
    std::chrono::milliseconds renew_every{3'000};  // renewal and heartbeat period
  } node;
};

// Per-namespace settings.
struct NamespaceOptions {
  // An activation idle (no message accepted, no lease) this long stops with
  // on_stop(idle) and leaves memory; its next message activates it again. 0 = never.
  std::chrono::milliseconds idle_timeout{0};
  // Bound of each activation's storage cache, in bytes of keys, values and bookkeeping
  // (0 = no cache: every read and listing goes to the backend). An object is the only
  // writer of its keys, so once read or listed they are served from memory, kept in step
  // by the object's own commits, until the activation ends (docs/runtime.md#storage-cache).
  // Resident objects x this bound is the most the caches may hold together.
  std::size_t storage_cache_bytes = 1024 * 1024;
  // Key prefixes (of the object's own keys) the storage cache never holds: reads and
  // listings under them always go to the backend, and writes there are not kept. For data
  // written once and rarely read back, such as an event log kept for resumes: cached, it
  // would fill the bound with history and push out the keys every turn reads, and the
  // cost of a turn would grow with the object's age. At most 8, each 1 to 256 bytes.
  std::vector<std::string> uncached_prefixes;
};

using ObjectFactory = std::function<std::unique_ptr<DurableObject>()>;

// What a runtime has done since it started, for `GET /metrics` (docs/operations.md#metrics).
// Counters only grow; gauges say how things are now. Each number is exact at the moment it
// is read, but they are read one by one, not as one snapshot.
struct RuntimeStats {
  struct Namespace {
    std::string name;
    std::uint64_t activations = 0;  // activations started
    std::uint64_t resident = 0;     // gauge: activations live now
    // Activations that left memory, by why: idle (the namespace's idle timeout, or the
    // object disposed of itself), budget (the resident budget), drain and shutdown (the
    // runtime stopping), reset (a failed turn).
    std::uint64_t stopped_idle = 0;
    std::uint64_t stopped_budget = 0;
    std::uint64_t stopped_drain = 0;
    std::uint64_t stopped_shutdown = 0;
    std::uint64_t resets = 0;
  };
  std::vector<Namespace> namespaces;  // every registered one, in name order
  // Every turn (handlers, alarms, continuations, on_start and on_stop), from its start to
  // its commit; its count is the number of turns.
  DurationHistogram::Snapshot turn_latency;
  // Alarm records created and deleted by committed turns (moving an alarm deletes one and
  // creates another): what the alarm index gained and lost since the start.
  std::uint64_t alarms_set = 0;
  std::uint64_t alarms_removed = 0;
  // Gauge: alarms due and not yet handed to their object — held back by the overdue rate
  // after a start, or waiting for a retry after a failed delivery. A lower bound when more
  // are due than the scheduler's window holds (RuntimeOptions::alarm_window).
  std::uint64_t alarms_late = 0;
};

class Runtime {
 public:
  // Starts a runtime over `backend`: reads (or creates, at first open) the id secret and
  // bumps the durable generation. A backend has one runtime at a time in a process (the
  // store's own lock keeps other processes out): a start over one whose runtime has not
  // shut down or crashed fails with `busy` and changes nothing. Errors: storage errors;
  // invalid_argument for a bad secret file; busy.
  static Result<std::unique_ptr<Runtime>> start(storage::Backend& backend,
                                                RuntimeOptions options = {});

  // shutdown(), unless the runtime already stopped.
  ~Runtime();

  // Graceful stop: alarms stop, every active object runs on_stop(shutdown) and commits,
  // a clean-shutdown marker is written, and the actor system ends. The next start over
  // this backend reports after_shutdown. Afterwards only destruction is allowed.
  void shutdown();
  // Abrupt stop, as if the process died: the storage handle is fenced first (so nothing
  // in flight commits any more, and a late write fails with `fenced`), then every actor
  // is killed; no hook runs. Only committed batches survive; the next start reports
  // after_crash. Afterwards only destruction is allowed.
  void crash();
  // How this runtime started: first (empty store), after_crash, after_shutdown or
  // after_redeploy. The default start reason of its activations.
  StartReason start_kind() const;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Registers a namespace; names are 1-64 characters of [a-z0-9._-].
  // Errors: invalid_argument for a bad or already registered name.
  Result<void> register_namespace(std::string_view ns, ObjectFactory factory,
                                  NamespaceOptions options = {});

  // ---- ids ----
  ObjectId id_from_name(std::string_view ns, std::string_view name) const;
  Result<ObjectId> new_unique_id(std::string_view ns) const;
  Result<ObjectId> parse_id(std::string_view ns, std::string_view text) const;
  // A 32-byte key for `purpose` (a name such as "mcp.request-state"), derived from the id
  // secret: every runtime over the same store, or given the same secret, derives the same
  // key, and the key changes only with the secret. For MACs over things a client carries.
  std::string derive_key(std::string_view purpose) const;

  // A handle usable before the object is active. Errors: unknown namespace.
  Result<ObjectHandle> get(const ObjectId& id) const;

  // ---- messages from outside any object ----
  template <class... Ts>
  void send(const ObjectHandle& to, Ts&&... xs) {
    deliver(to, caf::make_message(std::forward<Ts>(xs)...), nullptr);
  }
  // `on_reply` runs once, with the handler's reply or an error (object_reset, overloaded,
  // turn_failed, ...), on whichever thread finished the turn.
  template <class... Ts>
  void request(const ObjectHandle& to, ReplyHandler on_reply, Ts&&... xs) {
    deliver(to, caf::make_message(std::forward<Ts>(xs)...), std::move(on_reply));
  }
  // `trace`: the context of the span this message belongs to (a request's traceparent);
  // the activation it causes, if any, becomes a child span of it.
  void deliver(const ObjectHandle& to, caf::message msg, ReplyHandler on_reply,
               std::optional<trace::TraceContext> trace = std::nullopt);

  // ---- scale-out nodes (RuntimeOptions::node) ----
  // Node `node_id` could not be reached (a connection to its advertised address was
  // refused or timed out): for one lease period, an activation that finds an object's
  // lease held by that node waits for the lease to run out and then takes the object
  // over, as for a node whose heartbeat stopped, instead of refusing with not_owner at
  // once. Safe whatever the truth: a node that is alive after all keeps renewing its
  // leases, and the activation then refuses as before. Does nothing outside node mode.
  // Thread-safe.
  void presume_dead(std::string_view node_id);
  // This node is going away (a graceful stop; docs/scale-out.md, "Rolling deploys"), and
  // hands its objects over to the other nodes instead of letting them wait out its
  // leases: from now on no object activates here (a message for one that is not active is
  // refused with node_restarting, so its sender tries again and reaches another node), and
  // every active object stops as soon as it is idle — at once, or after the last message
  // it accepted — releasing its lease, which the next node asking takes at once. Objects
  // held open (DurableObject::keep_alive) stop at shutdown(). Does nothing outside node
  // mode. Idempotent, thread-safe.
  void hand_over();

  // ---- runtime indexes ----
  // Entries of index `name` with key >= start (after the index prefix), in key order, at
  // most `limit` (0 = all). Reads storage only; activates nothing.
  Result<std::vector<storage::KeyValue>> scan_index(std::string_view name,
                                                    std::string_view start = {},
                                                    std::size_t limit = 0) const;

  // ---- introspection ----
  std::uint64_t generation() const;
  // Live activations: the directory's entries.
  std::size_t active_objects() const;
  // Ids whose activation ended and that the runtime still keeps a record of (evicted ones,
  // whose next activation is a `wake`, and reset ones): memory held for the runtime's
  // life, a few bytes per id. Lets a test check that some traffic leaves nothing behind.
  std::size_t remembered_ids() const;
  // Counters and gauges for monitoring (see RuntimeStats). Thread-safe and cheap: reads
  // atomics, and takes the namespace lock only to list them.
  RuntimeStats stats() const;
  const Clock& clock() const;
  storage::Backend& backend() const;
  caf::actor_system& system();

  // ---- virtual time only ----
  // Runs every queued job, Inbox posts included, until none is left; returns how many ran.
  std::size_t run_until_idle();
  // Waits up to `timeout` (real time) for an Inbox post from another thread; whether one
  // is queued. Follow it with run_until_idle(). False at once on a threaded runtime.
  bool wait_for_posts(std::chrono::milliseconds timeout);
  // When the earliest pending CAF timer fires, on the runtime's clock; none if no timer.
  std::optional<std::int64_t> next_timer_ms();
  // Advances the virtual clock to the earliest pending timer and runs until idle.
  // Returns false (and does nothing) if no timer is pending.
  bool run_until_next_timer();

  struct Impl;

 private:
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm
