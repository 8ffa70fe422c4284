// ServerMetrics — what `dorm serve` shows at `GET /metrics`, in Prometheus' text format.
//
// The layers below count in plain atomics and know nothing of Prometheus: storage commits
// (storage::MeteredBackend), the runtime (Runtime::stats), the engine pool (Pool::stats),
// a scale-out node's forwarder, the HTTP server (responses by status, open streams) and the sessions (SessionCounters).
// This class reads them when scraped and turns them into metric families with
// prometheus-cpp, which also writes the text (its TextSerializer). No prometheus-cpp type
// appears in this header. Every series, with its type, labels and meaning, is listed in
// docs/operations.md#metrics.
//
// Sources are attached as the server starts up; a series whose source is not attached
// yet is left out (a scrape during start-up shows the HTTP server's counters alone).
//
// Three gauges are about what the store holds — sessions stored, paused executions,
// alarms pending — and the store keeps no count of them. count_stored() counts once, on a
// thread of its own (one seek per stored session or paused execution, one read per 1,024
// alarms), because a start cannot wait for that on a large store; from then on each gauge
// is its count plus what this process created and deleted since that count began. Until
// the count is done the three are absent. A session created or deleted while the count
// runs may be counted twice or missed, so the gauges can be off by the changes made during
// the count (docs/operations.md#metrics).
//
// Thread-safe: render() and scrape() may run on any thread, concurrently with attach and
// detach. Sources must stay alive until detach() returns (or this object is destroyed).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace dorm {
class Runtime;
}
namespace dorm::storage {
class MeteredBackend;
}
namespace dorm::engine {
class Pool;
}
namespace dorm::mcp {
class HttpServer;
class NodeForwarder;
struct HttpRequest;
struct HttpResponse;
struct MetricsAccessPolicy;
}  // namespace dorm::mcp

namespace dorm::actors {

struct SessionCounters;

class ServerMetrics {
 public:
  // `version`: what dorm_build_info's version label says.
  explicit ServerMetrics(std::string version);
  // detach().
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  void attach_http(const mcp::HttpServer& http);
  void attach_storage(const storage::MeteredBackend& store);
  // The runtime whose store count_stored() counts.
  void attach_runtime(const Runtime& runtime);
  void attach_engine(const engine::Pool& pool);
  // A scale-out node's forwarder (dorm_forwarded_requests_total and the unreachable count).
  void attach_forwarder(const mcp::NodeForwarder& forwarder);

  // The counters sessions add to: McpSessionOptions::counters. They live as long as this
  // object.
  SessionCounters& session_counters();

  // Starts counting what the attached runtime's store holds (see above) on a thread of its
  // own; does nothing without a runtime or when a count has already started. A failed
  // count is logged (`metrics_count_failed`) and leaves its gauges absent.
  void count_stored();

  // Waits up to `bound` for the count to be over (done, failed or stopped); whether it is.
  // False at once if no count was started.
  bool wait_counted(std::chrono::milliseconds bound) const;

  // Stops the count (waiting for its current read) and forgets every source. Call it
  // before any source is destroyed; later scrapes show what is left (nothing but
  // dorm_build_info). Idempotent.
  void detach();

  // The exposition: Prometheus text format 0.0.4.
  std::string render() const;

  // The answer to `GET /metrics`: refused by mcp::refuse_scrape(head, access), or 200 with
  // render()'s text (kContentType). HEAD gets the same head (the server drops the body).
  mcp::HttpResponse scrape(const mcp::HttpRequest& head,
                           const mcp::MetricsAccessPolicy& access) const;

  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dorm::actors
