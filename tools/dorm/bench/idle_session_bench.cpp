// `dorm bench runtime --part sessions`: the resident memory of an idle, initialized MCP
// session with no stream open.
//
// Each measurement runs in a fresh child process (`dorm bench session-memory`, hidden), so
// that no memory freed by an earlier measurement is reused by a later one without showing
// in RSS. The child:
//   1. creates one session the way a client does (`initialize`, then
//      `notifications/initialized`, each a SessionCall through SessionClient, as the HTTP
//      endpoint sends them, without HTTP), over a MemoryBackend;
//   2. copies everything that session stored to N more session ids (the same keys with
//      the object id's body replaced), so the store holds N initialized sessions that no
//      activation has touched yet in this process;
//   3. reads RSS (after malloc_trim), sends each of the N sessions one more
//      `notifications/initialized` (a client request: it activates the session, which
//      reads its metadata and runs the reaper, then stores its last activity; the write
//      replaces a value of the same size, so the store does not grow), from 16 client
//      threads, and reads RSS again with all N resident and idle.
// The parent runs the default storage cache and no cache as two subjects, alternating
// which goes first, one child each per round.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "runtime_bench_parts.hpp"
#include "self_child.hpp"
#include "session_client.hpp"


namespace dorm::bench {
namespace {

constexpr int kClientThreads = 16;
constexpr std::size_t kCopyBatch = 1000;

// A session id shaped like the ones the server mints (mcp/src/session_id.cpp: 32 hex
// digits), so the copy a session keeps of it costs what it costs in `dorm serve`.
std::string session_name(int i) {
  char text[33];
  std::snprintf(text, sizeof text, "%032x", i);
  return text;
}

// Copies every key that holds `from` (the template session's id body) with `to` in its
// place, into `batch`.
void copy_session(const std::vector<storage::KeyValue>& stored, std::string_view from,
                  std::string_view to, storage::WriteBatch& batch) {
  for (const auto& kv : stored) {
    auto at = kv.key.find(from);
    if (at == std::string::npos) continue;
    std::string key = kv.key;
    key.replace(at, from.size(), to);
    batch.put(std::move(key), kv.value);
  }
}

// Stores `n` copies of the session `template_name` holds.
void copy_sessions(Runtime& runtime, storage::Backend& backend, const std::string& template_name,
                   int n) {
  auto from = runtime.id_from_name(actors::kMcpSessionNamespace, template_name);
  auto stored = must(backend.scan(storage::ScanOptions{}));
  storage::WriteBatch batch;
  for (int i = 0; i < n; ++i) {
    auto to = runtime.id_from_name(actors::kMcpSessionNamespace, session_name(i));
    copy_session(stored, from.body(), to.body(), batch);
    if (batch.size() >= kCopyBatch || i + 1 == n) {
      must(backend.commit(batch));
      batch.clear();
    }
  }
}

double child_kib_per_session(const RuntimeBenchOptions& o, std::size_t cache_bytes) {
  SelfChild child({"bench", "session-memory", "--idle-sessions", std::to_string(o.idle_sessions),
                   "--workers", std::to_string(o.workers), "--storage-cache-bytes",
                   std::to_string(cache_bytes)},
                  "session-memory");
  std::string text = child.read_all();
  auto at = text.find("kib_per_session ");
  if (!child.exited_cleanly() || at == std::string::npos) {
    throw std::runtime_error("the session-memory child failed: " + text);
  }
  return std::stod(text.substr(at + 16));
}

}  // namespace

int run_session_memory_child(const RuntimeBenchOptions& o) {
  storage::MemoryBackend backend;
  mcp::ToolRegistry tools;
  must(actors::register_fixtures(tools, "testing"));
  actors::McpSessionOptions options;
  options.tools = &tools;
  options.storage_cache_bytes = o.storage_cache_bytes;
  // No idle alarm comes due while measuring, however slow the machine is.
  options.idle.idle_after = std::chrono::hours(24);
  auto runtime = start_runtime(backend, o.workers);
  must(actors::register_mcp_session(*runtime, options));
  execute::SessionClient client(*runtime);
  const std::string template_name = "template";
  client.initialize(template_name);
  client.notify(template_name, "notifications/initialized");
  copy_sessions(*runtime, backend, template_name, o.idle_sessions);

  double before = resident_bytes();
  std::vector<std::thread> threads;
  for (int t = 0; t < kClientThreads; ++t) {
    threads.emplace_back([&client, &o, t] {
      for (int i = t; i < o.idle_sessions; i += kClientThreads) {
        client.notify(session_name(i), "notifications/initialized");
      }
    });
  }
  for (auto& t : threads) t.join();
  double after = resident_bytes();
  // The template session and the N copies.
  if (runtime->active_objects() != static_cast<std::size_t>(o.idle_sessions) + 1) {
    throw std::runtime_error("not every idle session stayed resident");
  }
  std::printf("kib_per_session %.4f\n", (after - before) / o.idle_sessions / 1024);
  std::fflush(stdout);
  runtime->shutdown();
  return 0;
}

IdleSessions bench_idle_sessions(const RuntimeBenchOptions& o) {
  IdleSessions out;
  const std::size_t cache = NamespaceOptions{}.storage_cache_bytes;
  for (int round = 1; round <= o.rounds; ++round) {
    double cached = 0, uncached = 0;
    if (round % 2) {
      cached = child_kib_per_session(o, cache);
      uncached = child_kib_per_session(o, 0);
    } else {
      uncached = child_kib_per_session(o, 0);
      cached = child_kib_per_session(o, cache);
    }
    out.cached_kib.push_back(cached);
    out.uncached_kib.push_back(uncached);
    std::printf("round %d/%d, %d idle sessions: %.2f KiB each (no storage cache: %.2f)\n", round,
                o.rounds, o.idle_sessions, cached, uncached);
    std::fflush(stdout);
  }
  return out;
}

void print_idle_sessions(const IdleSessions& s, const RuntimeBenchOptions& o) {
  std::printf(
      "\n| row | unit | dorm, storage cache on (default) | dorm, no storage cache |\n"
      "|---|---|---:|---:|\n");
  std::printf("| idle initialized MCP sessions, %d resident | KiB/session | %.2f | %.2f |\n",
              o.idle_sessions, median(s.cached_kib), median(s.uncached_kib));
}

}  // namespace dorm::bench
