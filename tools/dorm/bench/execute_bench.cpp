// `dorm bench execute`: what code mode costs inside an MCP session, measured in process.
//
// One threaded Runtime over RocksDB (durability "process", as `dorm serve`'s default URI),
// the session namespace with the "testing" fixtures, and code mode on a real engine::Pool
// (dorm-engine-worker processes, `dorm serve`'s default pool size). Requests go to the
// session as SessionCall messages and come back through a Responder, as the HTTP endpoint
// sends and receives them, but with no HTTP: what is measured is the session and the engine.
// Every call is sent alone and waited for (concurrency 1); latency runs from the send to the
// moment the last byte of the answer is in (a streamed answer: its end).
//
//   1. Round trip: `execute {code: "return 1"}` against `tools/call echo` in the same
//      session, alternating call by call (which goes first alternates too).
//   2. Memory: this process's RSS with --paused executions paused for approval (spread over
//      50 sessions), against the same server idle and warm. A paused execution is a stored
//      record and journal, not an isolate, so the engine workers' RSS is shown alongside.
//   3. Resume from cold: executions that made 20 `tally` calls and paused at
//      `counter_increment` (an approval tool; the sessions' client has no elicitation), each
//      resumed with accept: the journal is replayed in a fresh isolate, then the approved
//      call runs. Baseline: a live execution making 20 `tally` calls, alternating with the
//      resumes, in the same sessions.
//
// Every answer is checked (status, value, the tally and counter a session should have): a
// wrong one ends the benchmark with the answer printed. Nothing here is asserted about
// time; the numbers go to docs/benchmarks.md.
#include "execute_bench.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.hpp"
#include "dorm/actors/code_mode.hpp"
#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/engine/pool.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/storage/rocksdb_backend.hpp"

namespace dorm::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Sessions the paused executions of the memory figure are spread over.
constexpr int kMemorySessions = 50;
// Sessions the resumes and their live baseline run in.
constexpr int kResumeSessions = 10;
// Calls of each subject before any measurement (JIT, caches, the allocator's arenas).
constexpr int kWarmupCalls = 50;
// Paused and approval windows far beyond any run: no session leaves memory by its idle
// alarm and no approval times out while the benchmark measures.
constexpr std::chrono::hours kNoExpiry{24};

const std::string kTrivial = "return 1";
// The memory figure's paused execution: one tool call, then a pause for approval.
const std::string kPauseAfterOne =
    "await tools.tally({}); return await tools.counter_increment({})";
// A 20-call journal and a pause; resumed with accept, it returns [last tally, counter].
const std::string kPauseAfterTwenty =
    "let t = 0; for (let i = 0; i < 20; i++) t = await tools.tally({}); "
    "const c = await tools.counter_increment({}); return [t, c];";
// The same 20 calls, live to the end.
const std::string kLiveTwenty =
    "let t = 0; for (let i = 0; i < 20; i++) t = await tools.tally({}); return t;";

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what);
}

template <class T>
T must(Result<T> r, const char* what) {
  if (!r) fail(std::string(what) + ": " + r.error().describe());
  return std::move(r).value();
}
void must(Result<void> r, const char* what) {
  if (!r) fail(std::string(what) + ": " + r.error().describe());
}

std::string compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  v.Accept(w);
  return buffer.GetString();
}

std::string json_string(const std::string& text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(text.c_str(), static_cast<rapidjson::SizeType>(text.size()));
  return buffer.GetString();
}

// `prefix` followed by `n`. (Built in two steps: `"x" + std::to_string(n)` trips GCC 12's
// false -Wrestrict in release builds.)
std::string numbered(const char* prefix, long n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// "[a,b]"
std::string pair_json(long a, long b) {
  std::string s = numbered("[", a);
  s += ',';
  s += std::to_string(b);
  s += ']';
  return s;
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// ---- one call, answered plainly or as a stream ----

// Where a call's answer lands: the Responder's callback fills it, or (a streamed answer)
// the stream's wake-ups do, as a connection's I/O thread would. `done` is set once, with
// the arrival time taken when the last bytes were in.
struct Arrival {
  std::mutex mutex;
  int status = 0;
  std::string body;
  bool over = false;
  bool aborted = false;
  Clock::time_point at;
  std::promise<void> done;

  void finish_plain(mcp::HttpResponse r) {
    {
      std::lock_guard lock(mutex);
      status = r.status;
      body = std::move(r.body);
      over = true;
      at = Clock::now();
    }
    done.set_value();
  }
  // Runs on whichever thread wrote to the stream; wake-ups may overlap.
  void read(mcp::StreamBody& stream) {
    {
      std::lock_guard lock(mutex);
      if (over) return;
      auto pending = stream.take();
      body += pending.bytes;
      stream.sent(pending.bytes.size());
      if (!pending.end && !pending.abort) return;
      over = true;
      aborted = pending.abort;
      at = Clock::now();
    }
    stream.close();  // as the connection does once the response is over
    done.set_value();
  }
};

struct Reply {
  double ms = 0;                // send to last byte
  rapidjson::Document message;  // the JSON-RPC response to the call
  std::string body;             // the whole answer, for error messages
};

// Drives sessions the way the HTTP endpoint does: one SessionCall per POST.
class SessionClient {
 public:
  explicit SessionClient(Runtime& runtime) : runtime_(runtime) {}

  void initialize(const std::string& session) {
    // No elicitation capability: a tool that needs approval pauses the execution.
    std::string body =
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
        R"("capabilities":{},"clientInfo":{"name":"dorm-bench","version":"1"}}})";
    Reply r = call(mcp::SessionCall::Kind::initialize, session, body, 0);
    if (!r.message.HasMember("result")) fail("initialize of " + session + " answered " + r.body);
  }

  // tools/call `tool` with `arguments_json`; returns the CallToolResult (and the time).
  Reply call_tool(const std::string& session, const std::string& tool,
                  const std::string& arguments_json) {
    std::int64_t id = ++next_id_;
    std::string body = numbered(R"({"jsonrpc":"2.0","id":)", id) +
                       R"(,"method":"tools/call","params":{"name":)" + json_string(tool) +
                       R"(,"arguments":)" + arguments_json + "}}";
    Reply r = call(mcp::SessionCall::Kind::post, session, body, id);
    if (!r.message.HasMember("result") || !r.message["result"].IsObject()) {
      fail("tools/call " + tool + " in " + session + " answered " + r.body);
    }
    return r;
  }

  Reply execute(const std::string& session, const std::string& code) {
    return call_tool(session, "execute", R"({"code":)" + json_string(code) + "}");
  }

  Reply resume_accept(const std::string& session, const std::string& execution_id) {
    return call_tool(session, "resume",
                     R"({"executionId":)" + json_string(execution_id) + R"(,"action":"accept"})");
  }

 private:
  Reply call(mcp::SessionCall::Kind kind, const std::string& session, const std::string& body,
             std::int64_t id) {
    auto parsed = mcp::parse_body(body);
    if (!std::holds_alternative<mcp::ParsedBody>(parsed))
      fail("the benchmark built a bad body: " + body);
    mcp::SessionCall c;
    c.kind = kind;
    c.session_id = session;
    c.caller = mcp::Identity{"bench", "dorm"};
    c.messages = std::get<mcp::ParsedBody>(parsed).messages;
    auto arrival = std::make_shared<Arrival>();
    auto arrived = arrival->done.get_future();
    c.responder = std::make_shared<mcp::Responder>([arrival](mcp::HttpResponse r) {
      if (!r.stream) return arrival->finish_plain(std::move(r));
      {
        std::lock_guard lock(arrival->mutex);
        arrival->status = r.status;
      }
      // The wake-up runs only inside the stream's own calls, so the raw pointer is live.
      mcp::StreamBody* stream = r.stream.get();
      stream->attach([arrival, stream] { arrival->read(*stream); });
    });
    auto handle = must(runtime_.get(runtime_.id_from_name(actors::kMcpSessionNamespace, session)),
                       "session handle");
    auto sent = Clock::now();
    runtime_.send(handle, std::move(c));
    if (arrived.wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
      give_up_waiting(("no answer in 2 minutes to " + body).c_str());
    }
    Reply out;
    std::lock_guard lock(arrival->mutex);
    out.ms = ms_between(sent, arrival->at);
    out.body = arrival->body;
    if (arrival->status != 200 || arrival->aborted) {
      fail(numbered("HTTP ", arrival->status) + (arrival->aborted ? " (stream aborted)" : "") +
           " for " + body + ": " + out.body);
    }
    // The SSE events' data lines; the one answering `id` is the reply.
    std::size_t at = 0;
    while ((at = out.body.find("data: ", at)) != std::string::npos) {
      auto end = out.body.find('\n', at);
      std::string data =
          out.body.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
      at = end;
      if (data.empty()) continue;  // a priming event
      rapidjson::Document doc;
      doc.Parse(data.c_str());
      if (doc.HasParseError() || !doc.IsObject())
        fail("unparsable event in the answer to " + body + ": " + data);
      if (doc.HasMember("id") && doc["id"].IsInt64() && doc["id"].GetInt64() == id) {
        out.message = std::move(doc);
        return out;
      }
    }
    fail(numbered("no response to request ", id) + " in: " + out.body);
  }

  Runtime& runtime_;
  std::atomic<std::int64_t> next_id_{0};
};

// ---- what the answers must say ----

const rapidjson::Value& structured(const Reply& r, const char* what) {
  const auto& result = r.message["result"];
  if (result.HasMember("isError") && result["isError"].IsTrue())
    fail(std::string(what) + " failed: " + r.body);
  if (!result.HasMember("structuredContent") || !result["structuredContent"].IsObject()) {
    fail(std::string(what) + " answered without structuredContent: " + r.body);
  }
  return result["structuredContent"];
}

// An execution that completed with `expected` (compact JSON) as its value.
void expect_completed(const Reply& r, const std::string& expected, const char* what) {
  const auto& s = structured(r, what);
  if (!s.HasMember("status") || !s["status"].IsString() ||
      std::string(s["status"].GetString()) != "completed" || !s.HasMember("result") ||
      compact(s["result"]) != expected) {
    fail(std::string(what) + ": expected completed with " + expected + ", got " + r.body);
  }
}

// An execution paused for approval; returns its id.
std::string expect_paused(const Reply& r, const char* what) {
  const auto& s = structured(r, what);
  if (!s.HasMember("status") || !s["status"].IsString() ||
      std::string(s["status"].GetString()) != "waiting_for_interaction" ||
      !s.HasMember("executionId") || !s["executionId"].IsString()) {
    fail(std::string(what) + ": expected waiting_for_interaction, got " + r.body);
  }
  return s["executionId"].GetString();
}

void expect_echo(const Reply& r, const std::string& text) {
  const auto& result = r.message["result"];
  bool ok = !(result.HasMember("isError") && result["isError"].IsTrue()) &&
            result.HasMember("content") && result["content"].IsArray() &&
            result["content"].Size() == 1 && result["content"][0].HasMember("text") &&
            result["content"][0]["text"].IsString() &&
            text == result["content"][0]["text"].GetString();
  if (!ok) fail("echo of " + text + " answered " + r.body);
}

// ---- the sessions of a part, with what their counters must be ----

struct BenchSession {
  std::string id;
  long tally = 0;    // the session's "tally" counter: real runs of tally
  long counter = 0;  // its "counter": approved counter_increment runs
};

std::vector<BenchSession> open_sessions(SessionClient& client, const char* prefix, int n) {
  std::vector<BenchSession> out;
  for (int i = 0; i < n; ++i) {
    char id[64];
    std::snprintf(id, sizeof id, "s-bench-%s-%04d", prefix, i);
    out.push_back({id});
    client.initialize(id);
  }
  return out;
}

// A kPauseAfterTwenty execution, paused.
struct PausedTwenty {
  std::string id;
  long tally = 0;  // the last tally it saw: the journal keeps it across the resume
};

PausedTwenty pause_twenty(SessionClient& client, BenchSession& s) {
  std::string id = expect_paused(client.execute(s.id, kPauseAfterTwenty),
                                 "execute (20 tally calls, then pause)");
  s.tally += 20;
  return {id, s.tally};
}

// Resumes `p` in `s` with accept: it must return [its tally, the session's next counter].
Reply resume_twenty(SessionClient& client, BenchSession& s, const PausedTwenty& p,
                    const char* what) {
  Reply r = client.resume_accept(s.id, p.id);
  ++s.counter;
  expect_completed(r, pair_json(p.tally, s.counter), what);
  return r;
}

// Reads both counters through code and compares them with what the benchmark counted: a
// replay that ran a tool again, or a lost call, shows here.
void check_counters(SessionClient& client, const BenchSession& s) {
  std::string expected = pair_json(s.tally, s.counter);
  expect_completed(
      client.execute(
          s.id, "return [await tools.counter_get({name: 'tally'}), await tools.counter_get({})]"),
      expected, "the counters after the run");
}

// ---- memory ----

double rss_mib_of(pid_t pid) {
  std::ifstream status(numbered("/proc/", pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

struct MemoryReading {
  double self_mib = 0;       // this process (after malloc_trim)
  double workers_mib = 0;    // the engine workers together
  double memtables_mib = 0;  // RocksDB's memtables (part of self)
};

MemoryReading read_memory(engine::Pool& pool, storage::RocksDbBackend& backend) {
  MemoryReading m;
  m.self_mib = resident_bytes() / (1024.0 * 1024.0);  // malloc_trim(0) first
  for (pid_t pid : pool.worker_pids()) m.workers_mib += rss_mib_of(pid);
  std::uint64_t memtables = 0;
  backend.db().GetIntProperty("rocksdb.cur-size-all-mem-tables", &memtables);
  m.memtables_mib = static_cast<double>(memtables) / (1024.0 * 1024.0);
  return m;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string with_commas(long n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

int run_execute_bench(const ExecuteBenchOptions& o) {
  if (o.rounds < 1 || o.calls < 1 || o.paused < 1)
    fail("--rounds, --calls and --paused must be at least 1");
  bool temporary = o.dir.empty();
  fs::path root = temporary ? fs::temp_directory_path() / numbered("dorm-bench-execute-", getpid())
                            : fs::path(o.dir);
  fs::path db_dir = root / "execute";
  fs::remove_all(db_dir);
  fs::create_directories(db_dir);
  unsigned cores = std::thread::hardware_concurrency();
  std::printf(
      "dorm bench execute: %d rounds, %d sequential calls per subject and round, %d paused "
      "executions; "
      "%u cores, load average %s; data in %s\n",
      o.rounds, o.calls, o.paused, cores, load_average().c_str(), db_dir.c_str());
  std::fflush(stdout);

  // Declared in the order they must outlive each other: the runtime stops first.
  auto backend = must(storage::RocksDbBackend::open(db_dir.string(), storage::Durability::process),
                      "open RocksDB");
  engine::PoolOptions pool_options;  // dorm serve's defaults: a worker per core, 4 slots each
  pool_options.worker_path = engine::default_worker_path();
  pool_options.workers = 0;
  pool_options.slots_per_worker = 4;
  if (pool_options.worker_path.empty())
    fail("dorm-engine-worker was not found next to dorm or in ../engine");
  auto pool = must(engine::Pool::create(pool_options), "engine pool");
  mcp::ToolRegistry tools;
  must(actors::register_fixtures(tools, "testing"), "testing fixtures");
  actors::McpSessionOptions session_options;
  session_options.tools = &tools;
  session_options.idle.idle_after = kNoExpiry;
  actors::CodeModeOptions code_mode;
  code_mode.pool = pool.get();
  code_mode.approval_timeout = kNoExpiry;
  must(actors::enable_code_mode(tools, session_options, code_mode), "code mode");
  RuntimeOptions runtime_options;  // as dorm serve: at least 4 CAF workers
  runtime_options.workers = std::max(4u, cores);
  auto runtime = must(Runtime::start(*backend, runtime_options), "runtime");
  must(actors::register_mcp_session(*runtime, session_options), "session namespace");
  SessionClient client(*runtime);

  // ---- warm-up: every path once in a while, in a session of its own ----
  {
    auto warm = open_sessions(client, "warm", 1);
    for (int i = 0; i < kWarmupCalls; ++i) {
      expect_completed(client.execute(warm[0].id, kTrivial), "1", "warm-up execute");
      expect_echo(client.call_tool(warm[0].id, "echo", R"({"text":"warm"})"), "warm");
    }
    for (int i = 0; i < 5; ++i) {
      resume_twenty(client, warm[0], pause_twenty(client, warm[0]), "warm-up resume");
    }
    check_counters(client, warm[0]);
  }

  // ---- 2. memory: first, while the server is otherwise fresh ----
  MemoryReading idle, held;
  double pause_seconds = 0;
  {
    auto sessions = open_sessions(client, "memory", std::min(kMemorySessions, o.paused));
    // Each session runs every path once before the idle reading, so what follows is the
    // paused executions and nothing a session costs anyway.
    for (auto& s : sessions) {
      expect_completed(client.execute(s.id, kLiveTwenty), std::to_string(s.tally + 20),
                       "memory warm-up execute");
      s.tally += 20;
      resume_twenty(client, s, pause_twenty(client, s), "memory warm-up resume");
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    idle = read_memory(*pool, *backend);
    std::set<std::string> ids;
    auto start = Clock::now();
    for (int i = 0; i < o.paused; ++i) {
      auto& s = sessions[static_cast<std::size_t>(i) % sessions.size()];
      ids.insert(expect_paused(client.execute(s.id, kPauseAfterOne),
                               "execute (1 tally call, then pause)"));
      ++s.tally;
    }
    pause_seconds = seconds_since(start);
    if (ids.size() != static_cast<std::size_t>(o.paused)) fail("paused executions share ids");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    held = read_memory(*pool, *backend);
    for (const auto& s : sessions)
      check_counters(client, s);  // tally ran once each; nothing approved
    std::printf(
        "memory: idle %.1f MiB, with %s paused executions %.1f MiB (+%.1f MiB; paused in %.1f s)\n",
        idle.self_mib, with_commas(o.paused).c_str(), held.self_mib, held.self_mib - idle.self_mib,
        pause_seconds);
    std::fflush(stdout);
  }

  // ---- 1 and 3, round by round ----
  auto trip = open_sessions(client, "trip", 1);
  auto resumers = open_sessions(client, "resume", kResumeSessions);
  std::vector<double> exec_p50, exec_p99, echo_p50, echo_p99, trip_ratio50, trip_ratio99;
  std::vector<double> resume_p50, resume_p99, live_p50, live_p99, resume_ratio50, resume_ratio99;
  for (int round = 1; round <= o.rounds; ++round) {
    // 1. execute `return 1` and tools/call echo, alternating call by call.
    std::vector<double> exec_ms, echo_ms;
    for (int i = 0; i < o.calls; ++i) {
      for (int k = 0; k < 2; ++k) {
        if ((i + round + k) % 2 == 0) {
          Reply r = client.execute(trip[0].id, kTrivial);
          expect_completed(r, "1", "execute `return 1`");
          exec_ms.push_back(r.ms);
        } else {
          std::string text = numbered("e", i);
          Reply r = client.call_tool(trip[0].id, "echo", R"({"text":)" + json_string(text) + "}");
          expect_echo(r, text);
          echo_ms.push_back(r.ms);
        }
      }
    }
    exec_p50.push_back(percentile(exec_ms, 50));
    exec_p99.push_back(percentile(exec_ms, 99));
    echo_p50.push_back(percentile(echo_ms, 50));
    echo_p99.push_back(percentile(echo_ms, 99));
    trip_ratio50.push_back(exec_p50.back() / echo_p50.back());
    trip_ratio99.push_back(exec_p99.back() / echo_p99.back());

    // 3. Pause `calls` executions (not timed), then resume each, alternating with a live
    // execution of the same 20 calls in the same session.
    std::vector<PausedTwenty> paused;
    for (int i = 0; i < o.calls; ++i) {
      paused.push_back(
          pause_twenty(client, resumers[static_cast<std::size_t>(i) % resumers.size()]));
    }
    std::vector<double> resume_ms, live_ms;
    for (int i = 0; i < o.calls; ++i) {
      auto& s = resumers[static_cast<std::size_t>(i) % resumers.size()];
      for (int k = 0; k < 2; ++k) {
        if ((i + round + k) % 2 == 0) {
          Reply r = resume_twenty(client, s, paused[static_cast<std::size_t>(i)],
                                  "resume (20-call journal, then the approved call)");
          resume_ms.push_back(r.ms);
        } else {
          Reply r = client.execute(s.id, kLiveTwenty);
          s.tally += 20;
          expect_completed(r, std::to_string(s.tally), "execute (20 tally calls, live)");
          live_ms.push_back(r.ms);
        }
      }
    }
    for (const auto& s : resumers) check_counters(client, s);
    resume_p50.push_back(percentile(resume_ms, 50));
    resume_p99.push_back(percentile(resume_ms, 99));
    live_p50.push_back(percentile(live_ms, 50));
    live_p99.push_back(percentile(live_ms, 99));
    resume_ratio50.push_back(resume_p50.back() / live_p50.back());
    resume_ratio99.push_back(resume_p99.back() / live_p99.back());

    std::printf(
        "round %d/%d: execute p50 %.3f p99 %.3f ms, tools/call p50 %.3f p99 %.3f ms (p50 ratio "
        "%.2f); "
        "resume p50 %.3f p99 %.3f ms, live p50 %.3f p99 %.3f ms (p50 ratio %.2f)\n",
        round, o.rounds, exec_p50.back(), exec_p99.back(), echo_p50.back(), echo_p99.back(),
        trip_ratio50.back(), resume_p50.back(), resume_p99.back(), live_p50.back(), live_p99.back(),
        resume_ratio50.back());
    std::fflush(stdout);
  }
  std::string load_after = load_average();
  runtime->shutdown();

  // Ratios are the medians of the rounds' own ratios: both subjects of a round ran
  // interleaved, under the same load.
  std::printf("\n| row | p50 ms | p99 ms |\n|---|---:|---:|\n");
  std::printf("| tools/call echo (baseline) | %.3f | %.3f |\n", median(echo_p50), median(echo_p99));
  std::printf("| execute `return 1` | %.3f | %.3f |\n", median(exec_p50), median(exec_p99));
  std::printf("| ratio execute / tools/call (target p50 <= 3) | %.2f | %.2f |\n",
              median(trip_ratio50), median(trip_ratio99));
  std::printf("| execute, 20 tally calls, live (baseline) | %.3f | %.3f |\n", median(live_p50),
              median(live_p99));
  std::printf(
      "| resume from cold: replay of 20 journaled calls, then the approved call | %.3f | %.3f |\n",
      median(resume_p50), median(resume_p99));
  std::printf("| ratio resume / live | %.2f | %.2f |\n", median(resume_ratio50),
              median(resume_ratio99));

  std::string paused_count = with_commas(o.paused);
  std::printf(
      "\n| memory (RSS after malloc_trim(0), one reading each) | idle, warm | %s paused | above "
      "idle |\n"
      "|---|---:|---:|---:|\n",
      paused_count.c_str());
  std::printf("| this process, MiB (target above idle <= 64) | %.1f | %.1f | %+.1f |\n",
              idle.self_mib, held.self_mib, held.self_mib - idle.self_mib);
  std::printf("| RocksDB memtables (inside this process), MiB | %.1f | %.1f | %+.1f |\n",
              idle.memtables_mib, held.memtables_mib, held.memtables_mib - idle.memtables_mib);
  std::printf("| engine workers together, MiB | %.1f | %.1f | %+.1f |\n", idle.workers_mib,
              held.workers_mib, held.workers_mib - idle.workers_mib);
  std::printf(
      "(%.1f KiB of this process per paused execution; %s paused over %d sessions in %.1f s; "
      "load average at the end %s)\n",
      (held.self_mib - idle.self_mib) * 1024.0 / o.paused, paused_count.c_str(),
      std::min(kMemorySessions, o.paused), pause_seconds, load_after.c_str());

  runtime.reset();
  pool.reset();
  backend.reset();
  if (temporary) {
    fs::remove_all(root);
  } else {
    fs::remove_all(db_dir);
  }
  return 0;
}

}  // namespace dorm::bench
