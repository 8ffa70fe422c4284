// ServerMetrics over real sessions on virtual time: what /metrics says after a workload
// (sessions created, resident, stored and deleted; turns; commits; alarms; reaped calls),
// and that the text keeps the exposition format's rules.
#include "dorm/actors/server_metrics.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "dorm/actors/fixtures.hpp"
#include "dorm/actors/mcp_session.hpp"
#include "dorm/actors/namespaces.hpp"
#include "dorm/mcp/metrics_access.hpp"
#include "dorm/mcp/session_call.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/runtime/store_inspector.hpp"
#include "dorm/storage/memory_backend.hpp"
#include "dorm/storage/metered_backend.hpp"

using namespace dorm;
using dorm::mcp::HttpResponse;
using dorm::mcp::SessionCall;

namespace {

// One sample line: name{labels} value.
struct Sample {
  std::string series;  // name and labels, as written
  double value;
};

std::vector<Sample> samples(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    out.push_back({line.substr(0, space), std::stod(line.substr(space + 1))});
  }
  return out;
}

// A metric name as the format allows it: [a-zA-Z_:][a-zA-Z0-9_:]*.
bool valid_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
  });
}

// The value of one series (name and labels exactly as the text writes them), if present.
std::optional<double> value(const std::string& text, const std::string& series) {
  for (const auto& s : samples(text)) {
    if (s.series == series) return s.value;
  }
  return std::nullopt;
}

struct MetricsFixture {
  storage::MemoryBackend memory;
  storage::MeteredBackend metered{memory};
  VirtualClock clock;
  actors::ServerMetrics metrics{"9.9.9-test"};
  mcp::ToolRegistry tools;
  actors::McpSessionOptions options;
  std::unique_ptr<Runtime> runtime;

  MetricsFixture() {
    REQUIRE(actors::register_fixtures(tools, "testing").ok());
    options.tools = &tools;
    options.counters = &metrics.session_counters();
    metrics.attach_storage(metered);
    start();
  }
  ~MetricsFixture() {
    metrics.detach();
    if (runtime) runtime->run_until_idle();
  }

  void start() {
    RuntimeOptions ro;
    ro.virtual_clock = &clock;
    auto rt = Runtime::start(metered, ro);
    REQUIRE(rt.ok());
    runtime = std::move(rt).value();
    REQUIRE(actors::register_mcp_session(*runtime, options).ok());
    metrics.attach_runtime(*runtime);
  }

  std::shared_ptr<std::optional<HttpResponse>> send(SessionCall::Kind kind,
                                                    const std::string& session,
                                                    std::string_view body = {}) {
    SessionCall c;
    c.kind = kind;
    c.session_id = session;
    c.caller = {"alice", "acme"};
    if (!body.empty()) {
      auto parsed = mcp::parse_body(body);
      REQUIRE(std::holds_alternative<mcp::ParsedBody>(parsed));
      c.messages = std::get<mcp::ParsedBody>(parsed).messages;
    }
    auto answer = std::make_shared<std::optional<HttpResponse>>();
    c.responder =
        std::make_shared<mcp::Responder>([answer](HttpResponse r) { *answer = std::move(r); });
    auto handle = runtime->get(runtime->id_from_name(actors::kMcpSessionNamespace, session));
    REQUIRE(handle.ok());
    runtime->send(*handle, std::move(c));
    runtime->run_until_idle();
    return answer;
  }
  int call(SessionCall::Kind kind, const std::string& session, std::string_view body = {}) {
    auto answer = send(kind, session, body);
    REQUIRE(answer->has_value());
    return (*answer)->status;
  }
  // What the store holds, counted straight from it.
  std::size_t stored_alarms() {
    auto in = StoreInspector::open(memory);
    REQUIRE(in.ok());
    return in->count_index_entries(keys::kAlarmIndex).value_or_throw();
  }
  void initialize(const std::string& session) {
    REQUIRE(
        call(
            SessionCall::Kind::initialize, session,
            R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})") ==
        200);
  }
};

std::string tool_call(int id, std::string_view tool, std::string_view args) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + std::string(tool) + R"(","arguments":)" +
         std::string(args) + "}}";
}

}  // namespace

TEST_CASE("server metrics: a workload shows in sessions, objects, turns, commits and alarms") {
  MetricsFixture f;
  auto before = f.metrics.render();
  CHECK(value(before, R"(dorm_build_info{version="9.9.9-test"})") == 1);
  CHECK(value(before, "dorm_sessions_created_total") == 0);
  CHECK_FALSE(value(before, "dorm_sessions_stored"));  // not counted yet
  const double commits_before = *value(before, "dorm_storage_commit_duration_seconds_count");

  for (const char* s : {"s-metrics-000000001", "s-metrics-000000002", "s-metrics-000000003"}) {
    f.initialize(s);
  }
  CHECK(f.call(SessionCall::Kind::post, "s-metrics-000000001",
               tool_call(2, "echo", R"({"text":"hi"})")) == 200);
  CHECK(f.call(SessionCall::Kind::remove, "s-metrics-000000003") == 200);

  auto text = f.metrics.render();
  CHECK(value(text, "dorm_sessions_created_total") == 3);
  CHECK(value(text, "dorm_sessions_deleted_total") == 1);
  CHECK(value(text, "dorm_sessions_resident") == 2);  // a deleted session leaves memory
  CHECK(value(text, R"(dorm_objects_resident{namespace="mcp-session"})") == 2);
  CHECK(value(text, R"(dorm_objects_activated_total{namespace="mcp-session"})") == 3);
  CHECK(value(text, R"(dorm_objects_evicted_total{namespace="mcp-session",reason="idle"})") == 1);
  CHECK(*value(text, "dorm_turn_duration_seconds_count") >= 6);
  CHECK(*value(text, "dorm_storage_commit_duration_seconds_count") >= commits_before + 5);
  CHECK(*value(text, "dorm_storage_commit_bytes_total") > 0);
  CHECK(value(text, "dorm_storage_commit_failures_total") == 0);
  CHECK(value(text, R"(dorm_reaped_calls_total{reason="server_restart"})") == 0);
  CHECK(value(text, "dorm_generation") == f.runtime->generation());
  CHECK(value(text, "dorm_alarms_late") == 0);
  CHECK_FALSE(value(text, "dorm_engine_executions_running"));  // no engine attached

  // The store count: two sessions left, with their alarms; then it follows the changes.
  f.metrics.count_stored();
  REQUIRE(f.metrics.wait_counted(std::chrono::seconds(30)));
  text = f.metrics.render();
  CHECK(value(text, "dorm_sessions_stored") == 2);
  const auto alarms = f.stored_alarms();
  CHECK(alarms >= 2);  // each session's idle alarm, and a finished stream's retention alarm
  CHECK(value(text, "dorm_alarms_pending") == alarms);
  f.initialize("s-metrics-000000004");
  CHECK(f.call(SessionCall::Kind::post, "s-metrics-000000004",
               tool_call(2, "echo", R"({"text":"again"})")) == 200);
  text = f.metrics.render();
  CHECK(value(text, "dorm_sessions_stored") == 3);
  CHECK(value(text, "dorm_alarms_pending") == f.stored_alarms());
  CHECK(f.call(SessionCall::Kind::remove, "s-metrics-000000001") == 200);
  CHECK(f.call(SessionCall::Kind::remove, "s-metrics-000000002") == 200);
  text = f.metrics.render();
  CHECK(value(text, "dorm_sessions_stored") == 1);
  CHECK(value(text, "dorm_alarms_pending") == f.stored_alarms());
  CHECK(value(text, "dorm_sessions_resident") == 1);
}

TEST_CASE("server metrics: calls a crash killed and the reaper answered are counted by reason") {
  MetricsFixture f;
  const std::string s = "s-metrics-reaped01";
  f.initialize(s);
  auto running = f.send(SessionCall::Kind::post, s, tool_call(7, "sleep", R"({"ms":30000})"));
  REQUIRE(running->has_value());  // streaming: the call runs on
  f.runtime->crash();
  f.start();
  // The next request activates the session, whose start reaps the dead call.
  CHECK(f.call(SessionCall::Kind::post, s, R"({"jsonrpc":"2.0","id":8,"method":"ping"})") == 200);
  auto text = f.metrics.render();
  CHECK(value(text, R"(dorm_reaped_calls_total{reason="server_restart"})") == 1);
  CHECK(value(text, R"(dorm_reaped_calls_total{reason="session_reset"})") == 0);
}

TEST_CASE("server metrics: the text keeps the format's rules") {
  MetricsFixture f;
  f.initialize("s-metrics-format001");
  const std::string text = f.metrics.render();
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helped;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with("# HELP ")) {
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (line.starts_with("# TYPE ")) {
      auto rest = line.substr(7);
      auto name = rest.substr(0, rest.find(' '));
      CHECK_MESSAGE(valid_name(name), name);
      CHECK(name.starts_with("dorm_"));
      CHECK_MESSAGE(types.emplace(name, rest.substr(rest.find(' ') + 1)).second, name);
    }
  }
  for (const auto& [name, type] : types) {
    CHECK_MESSAGE(helped.contains(name), name);
    if (type == "counter") CHECK_MESSAGE(name.ends_with("_total"), name);
    if (type == "gauge") CHECK_MESSAGE(!name.ends_with("_total"), name);
  }
  // Every sample belongs to a declared family (a histogram's by its suffixes).
  for (const auto& s : samples(text)) {
    auto name = s.series.substr(0, s.series.find('{'));
    bool declared = types.contains(name);
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (name.ends_with(suffix)) {
        declared = declared ||
                   types[name.substr(0, name.size() - std::string(suffix).size())] == "histogram";
      }
    }
    CHECK_MESSAGE(declared, s.series);
  }
  // A histogram's buckets never decrease, and +Inf is the count.
  double last = 0;
  for (const auto& s : samples(text)) {
    if (!s.series.starts_with("dorm_turn_duration_seconds_bucket")) continue;
    CHECK(s.value >= last);
    last = s.value;
  }
  CHECK(value(text, R"(dorm_turn_duration_seconds_bucket{le="+Inf"})") ==
        value(text, "dorm_turn_duration_seconds_count"));
}

TEST_CASE("server metrics: scrape answers with the text, or refuses as refuse_scrape says") {
  MetricsFixture f;
  mcp::MetricsAccessPolicy access;
  mcp::HttpRequest head;
  head.method = "GET";
  head.target = "/metrics";
  head.headers = {{"host", "127.0.0.1:8808", 1}};
  head.peer_loopback = true;
  auto ok = f.metrics.scrape(head, access);
  CHECK(ok.status == 200);
  CHECK(ok.headers[0] ==
        std::pair<std::string, std::string>{"Content-Type", actors::ServerMetrics::kContentType});
  CHECK(ok.body.find("# TYPE dorm_turn_duration_seconds histogram") != std::string::npos);
  head.peer_loopback = false;
  auto refused = f.metrics.scrape(head, access);
  CHECK(refused.status == 403);
  CHECK(refused.body.find("dorm_") == std::string::npos);

  // Once detached, only what needs no source is left.
  f.metrics.detach();
  auto bare = f.metrics.render();
  CHECK(value(bare, R"(dorm_build_info{version="9.9.9-test"})") == 1);
  CHECK_FALSE(value(bare, "dorm_turn_duration_seconds_count"));
}
