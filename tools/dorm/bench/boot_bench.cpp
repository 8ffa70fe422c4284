// `dorm bench boot` — exec of `dorm serve` to bind and to ready, after a SIGKILL left calls
// in flight among many stored sessions (docs/architecture.md#start-up-order: eager reaping).
//
// Preparation, once: a real Runtime (2 workers) over RocksDB with the mcp-session
// namespace and the "testing" fixtures creates N sessions by `initialize` SessionCalls
// (the messages the HTTP endpoint sends, with the single-user identity), the store is
// flushed and compacted (a server that has been up a while keeps its sessions in table
// files), then K of those sessions get a `tools/call` of `sleep` {ms: 30000}; once the K
// journal records and `mcp.inflight` entries are committed, the runtime crashes (storage
// fenced, actors killed, no hook runs: what SIGKILL leaves). So the store holds N
// sessions, K of them with a record of an older generation, and a WAL holding the K calls.
// The sessions' idle alarms are set a day out, as the alarms of a long-running server's
// stored sessions mostly are (their TTL), so none comes due during a round.
//
// Each round copies that store to a fresh directory (the page cache stays warm) and spawns
// `dorm serve --storage rocksdb:COPY --listen 127.0.0.1:0 --log-format json` (this same
// binary), timestamping in this process, on the steady clock: just before posix_spawn,
// and when each start-up log line (`bound`, `storage_open`, `runtime_started`,
// `boot_reap`) and the ready line on stdout are read from the child's pipes. The round
// checks that `boot_reap` names K sessions and K records, then SIGKILLs the child by its
// pid. A reference subject, interleaved round by round, boots over an empty directory.
#include "boot_bench.hpp"

#include <poll.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "bench_stats.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/jsonrpc.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/mcp/session_id.hpp"
#include "dorm/runtime/log.hpp"
#include "dorm/storage/rocksdb_backend.hpp"
#include "runtime_bench_parts.hpp"
#include "version.hpp"

extern char** environ;

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Calls outstanding at once while preparing: enough to keep both workers busy, far below
// the runtime's mailbox bound.
constexpr int kPrepareInFlight = 256;
// Sessions resident at once while preparing; the rest are evicted (their storage stays).
constexpr std::size_t kPrepareResident = 2'000;
// Written last by a complete preparation; a later run with the same --dir reuses the store.
constexpr const char* kReadyMarker = "BOOT_BENCH_PREPARED";

const char* const kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{},"clientInfo":{"name":"dorm-bench-boot","version":"1"}}})";
const char* const kSleepCall =
    R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}})";

std::vector<mcp::Message> parse_messages(std::string_view body) {
  auto parsed = mcp::parse_body(body);
  if (!std::holds_alternative<mcp::ParsedBody>(parsed)) throw std::runtime_error("bad fixture body");
  return std::get<mcp::ParsedBody>(parsed).messages;
}

// Sends SessionCalls with at most kPrepareInFlight unanswered, and keeps every answer (a
// streamed answer's body stays attached, so its call keeps running until the crash).
class CallPump {
 public:
  explicit CallPump(Runtime& runtime) : runtime_(runtime) {}

  void send(mcp::SessionCall call) {
    {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::seconds(60), [this] { return outstanding_ < kPrepareInFlight; })) {
        give_up_waiting("session calls stopped being answered while preparing");
      }
      ++outstanding_;
    }
    auto handle = must(runtime_.get(runtime_.id_from_name(actors::kMcpSessionNamespace, call.session_id)));
    call.responder = std::make_shared<mcp::Responder>([this](mcp::HttpResponse r) {
      std::lock_guard lock(mutex_);
      if (r.status != 200 && first_error_.empty()) first_error_ = std::to_string(r.status) + " " + r.body;
      answers_.push_back(std::move(r));
      --outstanding_;
      cv_.notify_all();
    });
    runtime_.send(handle, std::move(call));
  }

  // Waits until every call sent so far is answered; throws if one was not a 200.
  void drain() {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::seconds(120), [this] { return outstanding_ == 0; })) {
      give_up_waiting("session calls unanswered while preparing");
    }
    if (!first_error_.empty()) throw std::runtime_error("a preparing call failed: " + first_error_);
  }

 private:
  Runtime& runtime_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int outstanding_ = 0;
  std::string first_error_;
  std::vector<mcp::HttpResponse> answers_;
};

mcp::SessionCall session_call(mcp::SessionCall::Kind kind, std::string session, const char* body) {
  mcp::SessionCall c;
  c.kind = kind;
  c.session_id = std::move(session);
  c.caller = mcp::Identity{"local", ""};  // what `dorm serve` without --auth-tokens assigns
  c.messages = parse_messages(body);
  return c;
}

void prepare(const BootBenchOptions& o, const fs::path& dir) {
  auto started = Clock::now();
  fs::remove_all(dir);
  auto backend = must(storage::RocksDbBackend::open(dir.string(), storage::Durability::process));
  RuntimeOptions ro;
  ro.workers = 2;
  ro.resident_budget = kPrepareResident;
  ro.version_label = kVersion;  // as `dorm serve` labels it, so the boot is after_crash
  auto runtime = must(Runtime::start(*backend, ro));
  mcp::ToolRegistry tools;
  must(actors::register_fixtures(tools, "testing"));
  actors::McpSessionOptions so;
  so.server_version = kVersion;
  so.tools = &tools;
  so.idle.idle_after = std::chrono::hours(24);
  must(actors::register_mcp_session(*runtime, so));

  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(o.sessions));
  {
    CallPump pump(*runtime);
    for (int i = 0; i < o.sessions; ++i) {
      ids.push_back(must(mcp::new_session_id()));
      pump.send(session_call(mcp::SessionCall::Kind::initialize, ids.back(), kInitialize));
    }
    pump.drain();
  }
  std::printf("prepared %d sessions in %.1f s; flushing and compacting\n", o.sessions, seconds_since(started));
  std::fflush(stdout);
  backend->db().Flush(rocksdb::FlushOptions());
  backend->db().CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr);

  // Calls in flight, spread over the sessions.
  CallPump pump(*runtime);
  int stride = o.sessions / o.in_flight;
  for (int i = 0; i < o.in_flight; ++i) {
    pump.send(session_call(mcp::SessionCall::Kind::post, ids[static_cast<std::size_t>(i * stride)], kSleepCall));
  }
  pump.drain();  // answered = the response stream opened; the sleep runs on
  auto deadline = Clock::now() + std::chrono::seconds(30);
  for (;;) {
    auto entries = must(runtime->scan_index("mcp.inflight"));
    if (entries.size() == static_cast<std::size_t>(o.in_flight)) break;
    if (Clock::now() > deadline) give_up_waiting("the in-flight calls were not all journaled");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  runtime->crash();
  runtime.reset();
  backend.reset();
  std::ofstream(dir / kReadyMarker) << o.sessions << " " << o.in_flight << "\n";
  std::printf("prepared the store in %.1f s: %d sessions, %d with a call in flight\n",
              seconds_since(started), o.sessions, o.in_flight);
  std::fflush(stdout);
}

bool prepared(const BootBenchOptions& o, const fs::path& dir) {
  std::ifstream marker(dir / kReadyMarker);
  int sessions = 0, in_flight = 0;
  return static_cast<bool>(marker >> sessions >> in_flight) && sessions == o.sessions &&
         in_flight == o.in_flight;
}

// One boot of `dorm serve`: milliseconds from just before the spawn to each milestone.
struct Boot {
  double bound = 0, storage_open = 0, runtime_started = 0, boot_reap = 0, ready = 0;
  double reap_ms_logged = 0;  // the boot_reap line's own figure
  std::int64_t sessions = -1, records = -1;
};

// Reads the child's stdout and stderr line by line until the ready line, each line
// timestamped when it is read. Bounded by `wait`.
Boot boot_once(const fs::path& store, std::chrono::seconds wait) {
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::string storage = "rocksdb:" + store.string();
  const char* argv[] = {exe.c_str(), "serve", "--storage", storage.c_str(), "--listen", "127.0.0.1:0",
                        "--log-format", "json", nullptr};
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  for (int fd : {out[0], out[1], err[0], err[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  pid_t pid = 0;
  auto t0 = Clock::now();
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) throw std::runtime_error("cannot spawn dorm serve");

  auto ms_now = [t0] { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); };
  Boot b;
  std::string out_buf, err_buf, log_text;
  bool ready = false, eof_out = false, eof_err = false;
  auto on_log_line = [&](const std::string& line, double at) {
    log_text += line + "\n";
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("event") || !d["event"].IsString()) return;
    std::string event = d["event"].GetString();
    if (event == "bound") b.bound = at;
    if (event == "storage_open") b.storage_open = at;
    if (event == "runtime_started") b.runtime_started = at;
    if (event == "boot_reap") {
      b.boot_reap = at;
      b.sessions = d["sessions"].GetInt64();
      b.records = d["records"].GetInt64();
      b.reap_ms_logged = static_cast<double>(d["ms"].GetInt64());
    }
  };
  auto deadline = t0 + wait;
  while (!ready && !(eof_out && eof_err)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd fds[2] = {{eof_out ? -1 : out[0], POLLIN, 0}, {eof_err ? -1 : err[0], POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left)) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char chunk[4096];
      ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
      double at = ms_now();
      if (n <= 0) {
        (i == 0 ? eof_out : eof_err) = true;
        continue;
      }
      auto& buf = i == 0 ? out_buf : err_buf;
      buf.append(chunk, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
        std::string line = buf.substr(0, nl);
        if (i == 1) {
          on_log_line(line, at);
        } else if (line.rfind("listening on http://", 0) == 0) {
          b.ready = at;
          ready = true;
        }
      }
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);  // SIGKILL cannot be ignored: this returns
  close(out[0]);
  close(err[0]);
  if (!ready) {
    throw std::runtime_error("dorm serve did not print its ready line within " +
                             std::to_string(wait.count()) + " s; its log:\n" + log_text);
  }
  return b;
}

std::vector<double> column(const std::vector<Boot>& boots, double Boot::*field) {
  std::vector<double> v;
  for (const auto& b : boots) v.push_back(b.*field);
  return v;
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

int run_boot_bench(const BootBenchOptions& o) {
  if (o.in_flight < 1 || o.in_flight > o.sessions) throw std::runtime_error("--in-flight must be 1..--sessions");
  bool temporary = o.dir.empty();
  fs::path root = temporary ? fs::temp_directory_path() / numbered("dorm-bench-boot-", getpid()) : fs::path(o.dir);
  fs::create_directories(root);
  std::printf("dorm bench boot: %d rounds, %d sessions, %d with a call in flight, data in %s\n", o.rounds,
              o.sessions, o.in_flight, root.c_str());
  std::fflush(stdout);

  fs::path source = root / "prepared";
  if (prepared(o, source)) {
    std::printf("reusing the prepared store\n");
  } else {
    // 100,000 session_created lines would only slow the preparation down.
    log::configure(log::LogFormat::text, spdlog::level::warn);
    prepare(o, source);
  }

  std::vector<Boot> full, empty;
  auto wait = std::chrono::seconds(o.wait_s);
  for (int r = 0; r < o.rounds; ++r) {
    // Alternate which subject boots first, so neither always follows the other's exit.
    for (int s = 0; s < 2; ++s) {
      bool is_full = (s + r) % 2 == 0;
      fs::path copy = root / (is_full ? "round" : "empty");
      fs::remove_all(copy);
      if (is_full) {
        fs::copy(source, copy, fs::copy_options::recursive);
        fs::remove(copy / kReadyMarker);
      }
      Boot b = boot_once(copy, wait);
      std::int64_t expect = is_full ? o.in_flight : 0;
      if (b.sessions != expect || b.records != expect) {
        throw std::runtime_error("boot_reap reported " + std::to_string(b.sessions) + " sessions and " +
                                 std::to_string(b.records) + " records, expected " + std::to_string(expect));
      }
      (is_full ? full : empty).push_back(b);
      std::printf("round %d, %s: bound %.1f ms, storage open %.1f, runtime started %.1f, reaped %.1f "
                  "(%.0f ms logged), ready %.1f ms\n",
                  r + 1, is_full ? "stored sessions" : "empty store", b.bound, b.storage_open,
                  b.runtime_started, b.boot_reap, b.reap_ms_logged, b.ready);
      std::fflush(stdout);
    }
  }

  std::printf("\n| milestone, ms after exec | %d sessions, %d in flight: median | max | empty store: median | max |\n",
              o.sessions, o.in_flight);
  std::printf("|---|---:|---:|---:|---:|\n");
  const std::pair<const char*, double Boot::*> rows[] = {
      {"bound (`bound` log line)", &Boot::bound},
      {"storage open (`storage_open`)", &Boot::storage_open},
      {"runtime started (`runtime_started`)", &Boot::runtime_started},
      {"reaped (`boot_reap`)", &Boot::boot_reap},
      {"ready (ready line on stdout)", &Boot::ready},
  };
  for (const auto& [name, field] : rows) {
    auto f = column(full, field), e = column(empty, field);
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", name, median(f), max_of(f), median(e), max_of(e));
  }
  std::printf("\ntargets: exec to bind <= 100 ms, exec to ready <= 400 ms (median over %d rounds)\n", o.rounds);

  if (temporary) {
    fs::remove_all(root);
  } else {
    fs::remove_all(root / "round");
    fs::remove_all(root / "empty");
  }
  return 0;
}

}  // namespace dorm::bench
