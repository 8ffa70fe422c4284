// Eager reaping at boot on virtual time: after a crash, exactly the sessions holding
// journal records are activated, each reaps, and the others stay on disk.
#include <doctest/doctest.h>

#include "dorm/actors/boot_reaper.hpp"
#include "session_fixture.hpp"

using namespace dorm;
using namespace dorm::testing;

TEST_CASE("boot reaping: of 1,000 stored sessions, exactly the 10 with calls in flight are woken and reaped") {
  SessionFixture f;
  std::vector<std::string> busy;
  for (int i = 0; i < 1000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "s-boot-%010d", i);
    REQUIRE(f.initialize(name).status == 200);
    if (i % 100 == 7) {
      busy.push_back(name);
      SessionCall c;
      c.kind = SessionCall::Kind::post;
      c.session_id = name;
      c.caller = f.alice;
      c.messages = messages(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":30000}}})");
      f.send(std::move(c), std::make_shared<std::optional<HttpResponse>>());
    }
  }
  f.runtime->run_until_idle();
  REQUIRE(f.runtime->scan_index("mcp.inflight")->size() == 10);
  f.runtime->crash();
  f.runtime.reset();
  f.start();
  f.add_namespace();
  CHECK(f.runtime->active_objects() == 0);
  std::optional<actors::BootReapReport> report;
  REQUIRE(actors::reap_at_boot(*f.runtime, [&](actors::BootReapReport r) { report = std::move(r); }, 4).ok());
  f.runtime->run_until_idle();
  REQUIRE(report);
  CHECK(report->records == 10);
  CHECK(report->sessions == 10);
  CHECK(report->failed == 0);
  CHECK(f.runtime->active_objects() == 10);
  CHECK(f.runtime->scan_index("mcp.inflight")->empty());
  CHECK(f.tracer.spans_named("restart_reap").size() == 10);
  f.expected_active = 10;

  // An empty index: nothing is woken, and done still comes.
  std::optional<actors::BootReapReport> none;
  REQUIRE(actors::reap_at_boot(*f.runtime, [&](actors::BootReapReport r) { none = std::move(r); }).ok());
  f.runtime->run_until_idle();
  REQUIRE(none);
  CHECK(none->sessions == 0);
}
