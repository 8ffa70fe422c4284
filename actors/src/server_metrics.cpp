// ServerMetrics: the sources' counters as Prometheus metric families (what each series
// means: docs/operations.md#metrics). Only this file sees prometheus-cpp.
#include "dorm/actors/server_metrics.hpp"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/mcp/node_forwarder.hpp"
#include "dorm/mcp/http_server.hpp"
#include "dorm/mcp/metrics_access.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/runtime/store_inspector.hpp"
#include "dorm/storage/metered_backend.hpp"

namespace dorm::actors {
namespace {

namespace prom = prometheus;
using Labels = std::vector<prom::ClientMetric::Label>;

// The families of one scrape, in the order they are added. A deque, so the reference
// add() returns stays valid while more families are added.
class Families {
 public:
  prom::MetricFamily& add(std::string name, std::string help, prom::MetricType type) {
    families_.push_back(prom::MetricFamily{std::move(name), std::move(help), type, {}});
    return families_.back();
  }

  void counter(std::string name, std::string help, double value, Labels labels = {}) {
    sample(add(std::move(name), std::move(help), prom::MetricType::Counter), value,
           std::move(labels));
  }

  void gauge(std::string name, std::string help, double value, Labels labels = {}) {
    sample(add(std::move(name), std::move(help), prom::MetricType::Gauge), value,
           std::move(labels));
  }

  // One sample of `family` (a counter or a gauge).
  static void sample(prom::MetricFamily& family, double value, Labels labels) {
    prom::ClientMetric m;
    m.label = std::move(labels);
    if (family.type == prom::MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    family.metric.push_back(std::move(m));
  }

  void histogram(std::string name, std::string help, const DurationHistogram::Snapshot& s) {
    prom::ClientMetric m;
    std::uint64_t cumulative = 0;
    // The finite buckets; the serializer adds +Inf with the sample count, which is the sum
    // of every bucket (DurationHistogram::Snapshot), so the two always agree.
    for (std::size_t i = 0; i + 1 < DurationHistogram::kBuckets; ++i) {
      cumulative += s.buckets[i];
      prom::ClientMetric::Bucket bucket;
      bucket.cumulative_count = cumulative;
      bucket.upper_bound = DurationHistogram::bound_seconds(i);
      m.histogram.bucket.push_back(bucket);
    }
    m.histogram.sample_count = s.count;
    m.histogram.sample_sum = s.sum_seconds;
    add(std::move(name), std::move(help), prom::MetricType::Histogram)
        .metric.push_back(std::move(m));
  }

  std::vector<prom::MetricFamily> take() {
    return {std::make_move_iterator(families_.begin()), std::make_move_iterator(families_.end())};
  }

 private:
  std::deque<prom::MetricFamily> families_;
};

double as_double(std::uint64_t n) {
  return static_cast<double>(n);
}

// One gauge of what the store holds: a count made once, plus this process's net change
// since that count began (see server_metrics.hpp).
struct StoredCount {
  std::atomic<bool> done{false};
  // Written before `done` is set, never after.
  std::uint64_t counted = 0;
  std::uint64_t added_before = 0;
  std::uint64_t removed_before = 0;

  // The gauge, given the change counters now; none until the count is done.
  std::optional<double> value(std::uint64_t added_now, std::uint64_t removed_now) const {
    if (!done.load(std::memory_order_acquire)) return std::nullopt;
    // A change counted by the scan and again as a change can take it below zero.
    auto up = static_cast<double>(counted) + static_cast<double>(added_now - added_before);
    return std::max(0.0, up - static_cast<double>(removed_now - removed_before));
  }
};

}  // namespace

struct ServerMetrics::Impl : prom::Collectable {
  std::string version;
  SessionCounters sessions;

  mutable std::mutex mutex;  // guards the sources and `counter`
  const mcp::HttpServer* http = nullptr;
  const storage::MeteredBackend* store = nullptr;
  const Runtime* runtime = nullptr;
  const engine::Pool* pool = nullptr;
  const mcp::NodeForwarder* forwarder = nullptr;

  std::thread counter;  // count_stored()'s
  std::atomic<bool> stop_counting{false};
  // Set (under count_mutex) when count() returns, however it ends.
  mutable std::mutex count_mutex;
  mutable std::condition_variable count_cv;
  bool count_over = false;
  StoredCount sessions_stored;
  StoredCount executions_paused;
  StoredCount alarms_pending;

  std::vector<prom::MetricFamily> Collect() const override;
  void add_http(Families& out) const;
  void add_storage(Families& out) const;
  void add_runtime(Families& out) const;
  void add_sessions(Families& out, const RuntimeStats& stats) const;
  void add_engine(Families& out) const;
  void add_forwarding(Families& out) const;
  void count(const Runtime& runtime);
};

std::vector<prom::MetricFamily> ServerMetrics::Impl::Collect() const {
  Families out;
  out.gauge("dorm_build_info", "The dorm build serving; always 1.", 1, {{"version", version}});
  std::lock_guard lock(mutex);
  if (http) add_http(out);
  if (store) add_storage(out);
  if (runtime) add_runtime(out);
  if (pool) add_engine(out);
  if (forwarder) add_forwarding(out);
  return out.take();
}

void ServerMetrics::Impl::add_http(Families& out) const {
  auto& requests =
      out.add("dorm_http_requests_total",
              "HTTP responses, by status code: every path, streamed responses once they "
              "start, and the 503 of a connection refused over --max-connections.",
              prom::MetricType::Counter);
  for (const auto& [code, n] : http->responses_by_status()) {
    Families::sample(requests, as_double(n), {{"code", std::to_string(code)}});
  }
  out.gauge("dorm_http_connections_open", "HTTP connections open now (idle, busy or streaming).",
            as_double(http->open_connections()));
  out.gauge("dorm_sse_streams_open",
            "SSE responses being streamed now (POST and GET streams of /mcp).",
            as_double(http->open_streams()));
}

void ServerMetrics::Impl::add_storage(Families& out) const {
  auto c = store->counters();
  out.histogram("dorm_storage_commit_duration_seconds",
                "Time each commit to the store took, failed ones included.", c.latency);
  out.counter("dorm_storage_commit_bytes_total",
              "Key and value bytes of the batches committed to the store.",
              as_double(c.committed_bytes));
  out.counter("dorm_storage_commit_failures_total", "Commits to the store that failed.",
              as_double(c.failed));
}

void ServerMetrics::Impl::add_runtime(Families& out) const {
  auto stats = runtime->stats();
  out.gauge("dorm_generation", "The runtime's generation: one more at every start over this store.",
            as_double(runtime->generation()));
  auto& activated = out.add("dorm_objects_activated_total",
                            "Durable objects brought into memory (activations), by namespace.",
                            prom::MetricType::Counter);
  auto& resident = out.add("dorm_objects_resident", "Durable objects in memory now, by namespace.",
                           prom::MetricType::Gauge);
  auto& evicted =
      out.add("dorm_objects_evicted_total",
              "Durable objects that left memory to save it, by namespace and reason: idle (idle "
              "timeout, or the object disposed of itself, as an idle session does) or budget "
              "(the resident budget).",
              prom::MetricType::Counter);
  auto& reset = out.add("dorm_objects_reset_total",
                        "Durable objects dropped from memory because a turn failed, by namespace.",
                        prom::MetricType::Counter);
  for (const auto& ns : stats.namespaces) {
    Families::sample(activated, as_double(ns.activations), {{"namespace", ns.name}});
    Families::sample(resident, as_double(ns.resident), {{"namespace", ns.name}});
    Families::sample(evicted, as_double(ns.stopped_idle),
                     {{"namespace", ns.name}, {"reason", "idle"}});
    Families::sample(evicted, as_double(ns.stopped_budget),
                     {{"namespace", ns.name}, {"reason", "budget"}});
    Families::sample(reset, as_double(ns.resets), {{"namespace", ns.name}});
  }
  out.histogram("dorm_turn_duration_seconds",
                "Time each turn of a durable object took, from its start to its commit; the "
                "count is the number of turns.",
                stats.turn_latency);
  if (auto pending = alarms_pending.value(stats.alarms_set, stats.alarms_removed)) {
    out.gauge("dorm_alarms_pending",
              "Alarms stored and not yet cleared (counted at start, then followed).", *pending);
  }
  out.gauge("dorm_alarms_late",
            "Alarms due and not yet handed to their object: held back by the overdue rate "
            "after a start, or waiting to retry a failed delivery.",
            as_double(stats.alarms_late));
  add_sessions(out, stats);
}

void ServerMetrics::Impl::add_sessions(Families& out, const RuntimeStats& stats) const {
  double resident = 0;
  for (const auto& ns : stats.namespaces) {
    if (ns.name == kMcpSessionNamespace) resident = as_double(ns.resident);
  }
  out.gauge("dorm_sessions_resident", "MCP sessions in memory now.", resident);
  const auto created = sessions.created.load(std::memory_order_relaxed);
  const auto deleted = sessions.deleted.load(std::memory_order_relaxed);
  if (auto stored = sessions_stored.value(created, deleted)) {
    out.gauge("dorm_sessions_stored",
              "MCP sessions in the store, in memory or not (counted at start, then followed).",
              *stored);
  }
  out.counter("dorm_sessions_created_total", "MCP sessions created (initialize).",
              as_double(created));
  out.counter("dorm_sessions_deleted_total", "MCP sessions deleted (DELETE or --session-ttl).",
              as_double(deleted));
  auto& reaped =
      out.add("dorm_reaped_calls_total",
              "Calls a dead process or activation left unanswered that the restart reaper answered "
              "with -32001, by data.reason.",
              prom::MetricType::Counter);
  Families::sample(reaped,
                   as_double(sessions.reaped_server_restart.load(std::memory_order_relaxed)),
                   {{"reason", "server_restart"}});
  Families::sample(reaped, as_double(sessions.reaped_session_reset.load(std::memory_order_relaxed)),
                   {{"reason", "session_reset"}});
}

void ServerMetrics::Impl::add_engine(Families& out) const {
  auto stats = pool->stats();
  out.gauge("dorm_engine_executions_running", "Executions running in an engine worker now.",
            as_double(stats.running));
  out.gauge("dorm_engine_executions_queued", "Executions waiting for a free engine slot.",
            as_double(stats.queued));
  if (auto paused =
          executions_paused.value(sessions.executions_paused.load(std::memory_order_relaxed),
                                  sessions.executions_unpaused.load(std::memory_order_relaxed))) {
    out.gauge("dorm_engine_executions_paused",
              "Paused executions stored, waiting for resume or approval (counted at start, "
              "then followed).",
              *paused);
  }
  out.counter("dorm_engine_executions_completed_total", "Executions that completed.",
              as_double(stats.completed));
  auto& failed =
      out.add("dorm_engine_executions_failed_total",
              "Executions that failed, by kind (docs/engine.md).", prom::MetricType::Counter);
  for (std::uint8_t k = 1; k <= engine::kLastFailureKind; ++k) {
    Families::sample(
        failed, as_double(stats.failed_by_kind[k]),
        {{"kind", std::string(engine::to_string(static_cast<engine::FailureKind>(k)))}});
  }
  out.gauge("dorm_engine_workers_ready", "Engine worker processes ready.",
            as_double(stats.workers_ready));
  out.counter("dorm_engine_workers_lost_total",
              "Engine worker processes that died or were killed (recycling excluded).",
              as_double(stats.workers_lost));
}

void ServerMetrics::Impl::add_forwarding(Families& out) const {
  out.counter("dorm_forwarded_requests_total",
              "Requests for sessions another node serves, sent on to that node (scale-out).",
              as_double(forwarder->forwarded()));
  out.counter("dorm_forward_unreachable_total",
              "Forwarded requests whose node could not be reached; it was presumed dead.",
              as_double(forwarder->unreachable()));
}

// On the counter thread. Each count takes its change counters' values first, so what
// changes during the scan is counted by the scan, by the changes, or (a change the scan
// saw and that is also counted as a change) by both.
void ServerMetrics::Impl::count(const Runtime& rt) {
  struct Over {
    Impl& impl;
    ~Over() {
      {
        std::lock_guard lock(impl.count_mutex);
        impl.count_over = true;
      }
      impl.count_cv.notify_all();
    }
  } over{*this};
  const auto started = std::chrono::steady_clock::now();
  auto inspector = StoreInspector::open(rt.backend());
  if (!inspector) {
    log::error("metrics_count_failed", {{"error", inspector.error().describe()}});
    return;
  }
  auto finish = [](StoredCount& into, const Result<std::size_t>& n, std::uint64_t added,
                   std::uint64_t removed) {
    if (!n) return false;
    into.counted = *n;
    into.added_before = added;
    into.removed_before = removed;
    into.done.store(true, std::memory_order_release);
    return true;
  };
  auto load = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };

  auto created = load(sessions.created), deleted = load(sessions.deleted);
  auto session_count = inspector->count_objects(kMcpSessionNamespace, &stop_counting);
  auto paused = load(sessions.executions_paused), unpaused = load(sessions.executions_unpaused);
  Result<std::size_t> execution_count = std::size_t{0};
  if (session_count) {
    execution_count = inspector->count_objects(kExecutionOwnerNamespace, &stop_counting);
  }
  auto runtime_stats = rt.stats();
  Result<std::size_t> alarm_count = std::size_t{0};
  if (session_count && execution_count) {
    alarm_count = inspector->count_index_entries(keys::kAlarmIndex, &stop_counting);
  }
  for (const auto* result : {&session_count, &execution_count, &alarm_count}) {
    if (!*result) {
      if (result->error().code != ErrorCode::unavailable) {
        log::error("metrics_count_failed", {{"error", result->error().describe()}});
      }
      return;
    }
  }
  finish(sessions_stored, session_count, created, deleted);
  finish(executions_paused, execution_count, paused, unpaused);
  finish(alarms_pending, alarm_count, runtime_stats.alarms_set, runtime_stats.alarms_removed);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count();
  log::info("metrics_counted", {{"sessions", static_cast<std::uint64_t>(*session_count)},
                                {"paused_executions", static_cast<std::uint64_t>(*execution_count)},
                                {"alarms", static_cast<std::uint64_t>(*alarm_count)},
                                {"ms", static_cast<std::int64_t>(ms)}});
}

ServerMetrics::ServerMetrics(std::string version) : impl_(std::make_unique<Impl>()) {
  impl_->version = std::move(version);
}

ServerMetrics::~ServerMetrics() {
  detach();
}

void ServerMetrics::attach_http(const mcp::HttpServer& http) {
  std::lock_guard lock(impl_->mutex);
  impl_->http = &http;
}

void ServerMetrics::attach_storage(const storage::MeteredBackend& store) {
  std::lock_guard lock(impl_->mutex);
  impl_->store = &store;
}

void ServerMetrics::attach_runtime(const Runtime& runtime) {
  std::lock_guard lock(impl_->mutex);
  impl_->runtime = &runtime;
}

void ServerMetrics::attach_engine(const engine::Pool& pool) {
  std::lock_guard lock(impl_->mutex);
  impl_->pool = &pool;
}

void ServerMetrics::attach_forwarder(const mcp::NodeForwarder& forwarder) {
  std::lock_guard lock(impl_->mutex);
  impl_->forwarder = &forwarder;
}

SessionCounters& ServerMetrics::session_counters() {
  return impl_->sessions;
}

void ServerMetrics::count_stored() {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->runtime || impl_->counter.joinable()) return;
  impl_->counter =
      std::thread([impl = impl_.get(), runtime = impl_->runtime] { impl->count(*runtime); });
}

bool ServerMetrics::wait_counted(std::chrono::milliseconds bound) const {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->counter.joinable()) {
      std::lock_guard over(impl_->count_mutex);
      return impl_->count_over;
    }
  }
  std::unique_lock lock(impl_->count_mutex);
  return impl_->count_cv.wait_for(lock, bound, [this] { return impl_->count_over; });
}

void ServerMetrics::detach() {
  std::thread counter;
  {
    std::lock_guard lock(impl_->mutex);
    counter = std::move(impl_->counter);
  }
  impl_->stop_counting.store(true, std::memory_order_relaxed);
  if (counter.joinable()) counter.join();
  std::lock_guard lock(impl_->mutex);
  impl_->http = nullptr;
  impl_->store = nullptr;
  impl_->runtime = nullptr;
  impl_->pool = nullptr;
  impl_->forwarder = nullptr;
}

std::string ServerMetrics::render() const {
  return prom::TextSerializer().Serialize(impl_->Collect());
}

mcp::HttpResponse ServerMetrics::scrape(const mcp::HttpRequest& head,
                                        const mcp::MetricsAccessPolicy& access) const {
  if (auto refused = mcp::refuse_scrape(head, access)) return std::move(*refused);
  return mcp::HttpResponse{
      200, {{"Content-Type", kContentType}, {"Cache-Control", "no-store"}}, render()};
}

}  // namespace dorm::actors
