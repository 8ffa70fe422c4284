// `dorm deploy-sim`'s pure parts: a row's outcomes and their table (text, Markdown, JSON),
// the SVG timeline, the seeded workload, the rows a command line asks for and the servers'
// arguments. The SSE decoder, the SDK client's rules and the call outcomes it sums up are
// the testing/ layer's (tests/testing); the processes and sockets are exercised end to end
// by tests/e2e/deploy_sim.test.mjs.
#include "deploy_sim.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>

#include "outcome.hpp"
#include "report.hpp"
#include "simulation.hpp"
#include "timeline_svg.hpp"
#include "workload.hpp"

using namespace dorm::deploy_sim;
using dorm::testing::Outcome;
using dorm::testing::OutcomeKind;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

SimCall call(int session, int slot, OutcomeKind kind, std::int64_t start, std::int64_t end,
             std::int64_t deploy, std::string reason = {}) {
  SimCall c;
  c.session = session;
  c.slot = slot;
  c.record.start_ms = start;
  c.record.end_ms = end;
  c.record.deploy_ms = deploy;
  c.record.outcome = Outcome{kind, kind == OutcomeKind::failed ? -32001 : 0, std::move(reason)};
  return c;
}

RowRun sample_run() {
  RowRun run;
  run.key = RowKey{"reaper", "kill", 500, 100};
  run.sessions = 2;
  run.calls_per_session = 2;
  run.deploys_ms = {1000};
  run.end_ms = 4000;
  run.unanswered_ms_max = 210;
  run.unanswered_probes = 3;
  run.calls = {call(0, 0, OutcomeKind::failed, 0, 1500, 1000, "server_restart"),
               call(0, 1, OutcomeKind::failed, 0, 1700, 1000, "server_restart"),
               call(1, 0, OutcomeKind::answered, 0, 800, 1000),
               call(1, 1, OutcomeKind::hung, 0, 4000, 1000)};
  return run;
}

}  // namespace

TEST_CASE("outcomes: a row sums its calls' records up and keeps its key and probe counts") {
  auto s = summarize(sample_run());
  CHECK(s.key.variant == "reaper");
  CHECK(s.outcomes.calls == 4);
  CHECK(s.outcomes.answered == 1);
  CHECK(s.outcomes.failed == 2);
  CHECK(s.outcomes.hung == 1);
  CHECK(s.outcomes.error_ms_p50 == 500);
  CHECK(s.outcomes.error_ms_p99 == 700);
  CHECK(s.outcomes.reasons == std::map<std::string, std::size_t>{{"server_restart", 2}});
  CHECK(s.unanswered_ms_max == 210);
  CHECK(s.unanswered_probes == 3);
  CHECK(last_event_ms(sample_run()) == 4000);
}

TEST_CASE("report: text aligns columns, Markdown has one rule, JSON has every member") {
  ReportHeader h{"0.1.0", 7, 2, 2, 1, 100, 200, 10, 5};
  auto rows = std::vector<RowSummary>{summarize(sample_run())};
  RowRun quiet = sample_run();
  quiet.key.variant = "no-fix";
  for (auto& c : quiet.calls) c.record.outcome = Outcome{OutcomeKind::hung, 0, {}};
  rows.push_back(summarize(quiet));

  auto text = format_text(h, rows);
  CHECK(text.find("seed 7") != std::string::npos);
  std::vector<std::string> lines;
  for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
    lines.push_back(text.substr(at, end - at));
  REQUIRE(lines.size() == 5);  // header, column names, two rows, the footnote
  auto hung_at = lines[1].find("hung");
  REQUIRE(hung_at != std::string::npos);
  CHECK(lines[2][hung_at + 3] == '1');  // numbers end under their column's name
  CHECK(lines[3][hung_at + 3] == '4');
  CHECK(lines[2].find("server_restart 2") != std::string::npos);

  auto md = format_markdown(h, rows);
  CHECK(count(md, "\n| --- |") == 1);  // one rule line under the column names
  CHECK(md.find("| no-fix | kill | 500 ms | 100 ms | 4 | 0 | 0 | - | - | 4 |") !=
        std::string::npos);

  rapidjson::Document doc;
  doc.Parse(format_json(h, rows).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(std::string(doc["version"].GetString()) == "0.1.0");
  CHECK(doc["seed"].GetUint64() == 7);
  const auto& r0 = doc["rows"][0];
  CHECK(std::string(r0["variant"].GetString()) == "reaper");
  CHECK(r0["failed_fast"].GetInt() == 2);
  CHECK(r0["error_ms_p50"].GetDouble() == 500);
  CHECK(r0["reasons"]["server_restart"].GetInt() == 2);
  CHECK(r0["reasons"]["server_draining"].GetInt() == 0);
  CHECK(r0["unanswered_ms_max"].GetDouble() == 210);
  CHECK(r0["unanswered_probes"].GetInt() == 3);
  const auto& r1 = doc["rows"][1];
  CHECK(r1["hung"].GetInt() == 4);
  CHECK(r1["error_ms_p50"].IsNull());
  CHECK(r1["restart_gap_ms"].GetInt() == 100);
  CHECK(doc["virtual"].IsFalse());
}

TEST_CASE("report: on virtual time the header says so and the unanswered columns are empty") {
  ReportHeader h{"0.1.0", 7, 2, 2, 1, 100, 200, 10, 5, true};
  RowRun run = sample_run();
  run.unanswered_ms_max.reset();
  run.unanswered_probes.reset();
  auto rows = std::vector<RowSummary>{summarize(run)};
  auto text = format_text(h, rows);
  CHECK(text.find("deploy-sim on virtual time, seed 7") != std::string::npos);
  CHECK(text.find("(none on virtual time)") != std::string::npos);
  CHECK(format_markdown(h, rows).find("| 0.50 s | 0.70 s | 1 | - | server_restart 2 |") !=
        std::string::npos);
  rapidjson::Document doc;
  doc.Parse(format_json(h, rows).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(doc["virtual"].IsTrue());
  const auto& r0 = doc["rows"][0];
  CHECK(r0["unanswered_ms_max"].IsNull());
  CHECK(r0["unanswered_probes"].IsNull());
  CHECK(r0["failed_fast"].GetInt() == 2);
}

TEST_CASE("SVG: a lane per session and a bar per call, classed by outcome; text escaped") {
  RowRun run = sample_run();
  RowRun other = sample_run();
  other.key.variant = "<odd & \"named\">";
  auto svg = timeline_svg({run, other}, "seed 1 <test>");
  CHECK(svg.starts_with("<?xml"));
  CHECK(svg.ends_with("</svg>\n"));
  CHECK(count(svg, "<g class=\"lane\"") == 4);
  CHECK(count(svg, "<rect class=\"call ") == 8);
  CHECK(count(svg, "class=\"call failed\"") == 4);
  CHECK(count(svg, "class=\"call hung\"") == 2);
  CHECK(count(svg, "class=\"deploy\"") == 2);
  CHECK(svg.find("&lt;odd &amp; &quot;named&quot;&gt;") != std::string::npos);
  CHECK(svg.find("<odd") == std::string::npos);
  CHECK(svg.find("seed 1 &lt;test&gt;") != std::string::npos);
  CHECK(xml_escape("a'b") == "a&apos;b");
}

TEST_CASE("workload: the seed decides every duration, all inside the range") {
  auto a = draw_workload(42, 3, 5, 2, 100, 200);
  auto b = draw_workload(42, 3, 5, 2, 100, 200);
  auto c = draw_workload(43, 3, 5, 2, 100, 200);
  CHECK(a.durations_ms == b.durations_ms);
  CHECK(a.durations_ms != c.durations_ms);
  REQUIRE(a.durations_ms.size() == 3);
  REQUIRE(a.durations_ms[0].size() == 5);
  REQUIRE(a.durations_ms[0][0].size() == 2);
  std::set<std::int64_t> seen;
  for (const auto& round : a.durations_ms)
    for (const auto& session : round)
      for (auto d : session) {
        CHECK(d >= 100);
        CHECK(d <= 200);
        seen.insert(d);
      }
  CHECK(seen.size() > 10);
  CHECK(draw_workload(1, 1, 1, 1, 7, 7).durations_ms[0][0][0] == 7);
  // The first numbers of seed 1 are fixed: a change to the generator changes every table.
  SeededRng rng(1);
  CHECK(rng.next() == 0x910a2dec89025cc1ull);
}

TEST_CASE("--call-ms: MIN-MAX or one number; anything else is an error saying why") {
  auto r = parse_call_ms("100-2500");
  REQUIRE(r);
  CHECK(r->min_ms == 100);
  CHECK(r->max_ms == 2500);
  auto one = parse_call_ms("800");
  REQUIRE(one);
  CHECK(one->min_ms == 800);
  CHECK(one->max_ms == 800);
  CHECK(parse_call_ms("300-100").error().message.find("MIN must not exceed MAX") !=
        std::string::npos);
  for (const char* bad : {"", "x", "-5", "1-", "1-2-3", "100000000000"})
    CHECK_FALSE(parse_call_ms(bad));
}

TEST_CASE("rows: every mode, variant, retry and gap; rolling has no gap") {
  DeploySimOptions o;
  o.variant = "all";
  o.mode = "all";
  o.retry_ms = {500, 2000};
  o.restart_gap_ms = {100, 1000, 5000};
  auto rows = plan_rows(o);
  CHECK(rows.size() == 2 * 3 * 2 * 3 + 3 * 2);
  CHECK(rows.front().mode == "kill");
  CHECK(rows.front().variant == "no-fix");
  CHECK(rows.back().mode == "rolling");
  CHECK(rows.back().restart_gap_ms == 0);
  o.variant = "reaper";
  o.mode = "kill";
  CHECK(plan_rows(o).size() == 6);
}

TEST_CASE("servers: the variant's switches, the drain and reuse-port of term and rolling") {
  RowPlan plan;
  plan.dir = "/tmp/x";
  plan.drain_timeout_s = 5;
  auto joined = [&] {
    std::string s;
    for (const auto& a : serve_args(plan, 4321)) s += a + " ";
    return s;
  };
  plan.key = RowKey{"no-fix", "kill", 500, 0};
  auto kill = joined();
  CHECK(kill.find("--listen 127.0.0.1:4321 ") != std::string::npos);
  CHECK(kill.find("--no-priming --no-reaper") != std::string::npos);
  CHECK(kill.find("--drain-timeout") == std::string::npos);
  CHECK(kill.find("--retry-ms 500 ") != std::string::npos);
  plan.key = RowKey{"priming-only", "term", 2000, 0};
  auto term = joined();
  CHECK(term.find("--no-reaper") != std::string::npos);
  CHECK(term.find("--no-priming") == std::string::npos);
  CHECK(term.find("--drain-timeout 5 ") != std::string::npos);
  CHECK(term.find("--lock-wait 40 ") != std::string::npos);
  CHECK(term.find("--reuse-port") == std::string::npos);
  plan.key = RowKey{"reaper", "rolling", 500, 0};
  auto rolling = joined();
  CHECK(rolling.find("--no-") == std::string::npos);
  CHECK(rolling.find("--reuse-port") != std::string::npos);
}

TEST_CASE("servers: a node of several gets its id, the row's store and the lease options") {
  RowPlan plan;
  plan.dir = "/tmp/x";
  plan.key = RowKey{"reaper", "rolling", 500, 0};
  plan.storage = "postgres://dorm@/db?host=/tmp/pg&table=dorm_deploy_sim&shared=true";
  plan.nodes = 3;
  plan.lease_ms = 4000;
  std::string node;
  for (const auto& a : serve_args(plan, 4321, "s1-r1-n2-1")) node += a + " ";
  CHECK(node.find("--storage " + plan.storage + " ") != std::string::npos);
  CHECK(node.find("--node-id s1-r1-n2-1 ") != std::string::npos);
  CHECK(node.find("--lease-ms 4000 --lease-renew-ms 1000 ") != std::string::npos);
  CHECK(node.find("rocksdb:") == std::string::npos);
  // One server: no node id, so no lease options either.
  std::string lone;
  for (const auto& a : serve_args(plan, 4321)) lone += a + " ";
  CHECK(lone.find("--node-id") == std::string::npos);
  CHECK(lone.find("--lease-ms") == std::string::npos);
}

TEST_CASE("--storage: a postgres:// URI gets deploy-sim's table, and shared=true for nodes") {
  auto one = row_storage("postgres://dorm@/db?host=/tmp/pg", 1);
  REQUIRE(one);
  CHECK(one->find("table=dorm_deploy_sim") != std::string::npos);
  CHECK(one->find("shared") == std::string::npos);
  auto three = row_storage("postgres://dorm@/db?host=/tmp/pg", 3);
  REQUIRE(three);
  CHECK(three->find("table=dorm_deploy_sim") != std::string::npos);
  CHECK(three->find("shared=true") != std::string::npos);
  // The result is a storage URI that parses back as written.
  CHECK(row_storage(*three, 1).error().message.find("leave out table=") != std::string::npos);
  CHECK(row_storage("rocksdb:/tmp/x", 1).error().message.find("postgres://") != std::string::npos);
  CHECK(row_storage("postgres://dorm@/db?shared=true", 3).error().message.find("shared=") !=
        std::string::npos);
  CHECK_FALSE(row_storage("postgres://dorm@/db?durability=sometimes", 1));
}

TEST_CASE("options: several nodes need a shared store; --virtual takes neither") {
  DeploySimOptions o;
  CHECK(check_options(o));
  o.nodes = 3;
  CHECK(check_options(o).error().message.find("needs --storage postgres://") != std::string::npos);
  o.storage = "postgres://dorm@/db?host=/tmp/pg";
  CHECK(check_options(o));
  o.lease_ms = 4000;
  CHECK(check_options(o));
  o.virtual_time = true;
  CHECK(check_options(o).error().message.find("--virtual") != std::string::npos);
  DeploySimOptions lone;
  lone.lease_ms = 4000;
  CHECK(check_options(lone).error().message.find("--nodes 2") != std::string::npos);
  lone.lease_ms = 0;
  lone.storage = "sqlite:/tmp/x.db";
  CHECK(check_options(lone).error().message.find("postgres://") != std::string::npos);
}

TEST_CASE("report: the header names the nodes and their store; JSON carries both") {
  ReportHeader h{"0.1.0", 7, 2, 2, 1, 100, 200, 10, 5, false, 3, "postgres"};
  auto rows = std::vector<RowSummary>{summarize(sample_run())};
  CHECK(format_text(h, rows).find("deploy-sim of 3 nodes over postgres, seed 7") !=
        std::string::npos);
  rapidjson::Document doc;
  doc.Parse(format_json(h, rows).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(doc["nodes"].GetInt() == 3);
  CHECK(std::string(doc["storage"].GetString()) == "postgres");
  ReportHeader lone{"0.1.0", 7, 2, 2, 1, 100, 200, 10, 5};
  CHECK(format_text(lone, rows).find("deploy-sim, seed 7") != std::string::npos);
}
