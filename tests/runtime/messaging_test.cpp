// Messages between objects go through the output gate: sends and requests leave only when
// the sending turn commits, and a request's continuation runs as a turn of its own.
#include <doctest/doctest.h>

#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;
using dorm::testing::must;

namespace {

using set_atom = caf::atom_constant<caf::atom("set")>;
using get_atom = caf::atom_constant<caf::atom("get")>;
using copy_atom = caf::atom_constant<caf::atom("copy")>;
using tell_atom = caf::atom_constant<caf::atom("tell")>;


// Holds one durable int.
struct Cell : DurableObject {
  int value = 0;
  void on_start(StartReason) override {
    auto v = get("v");
    must(v.ok(), "get failed");
    value = *v ? std::stoi(**v) : 0;
  }
  caf::behavior behavior() override {
    return {
        [this](set_atom, int v) -> int {
          value = v;
          must(put("v", std::to_string(v)).ok(), "put failed");
          return v;
        },
        [this](get_atom) -> int { return value; },
        // Asks another cell for its value and stores it when the answer comes.
        [this](copy_atom, std::string from) -> int {
          request(ObjectHandle{runtime().id_from_name("cell", from)},
                  [this](caf::expected<caf::message> r) {
                    must(static_cast<bool>(r), "request failed");
                    value = r->get_as<int>(0);
                    must(put("v", std::to_string(value)).ok(), "put failed");
                  },
                  get_atom::value);
          return 0;
        },
        // Sends `set v` to another cell, then (maybe) fails this turn.
        [this](tell_atom, std::string to, int v, bool fail) -> int {
          send(ObjectHandle{runtime().id_from_name("cell", to)}, set_atom::value, v);
          must(put("last-told", to).ok(), "put failed");  // so this turn has a commit
          if (fail) throw std::runtime_error("failing after send");
          return v;
        },
    };
  }
};

struct CellFixture : RuntimeFixture {
  CellFixture() {
    REQUIRE(runtime->register_namespace("cell", [] { return std::make_unique<Cell>(); }).ok());
  }
  int read(std::string_view name) {
    Reply r;
    runtime->request(handle("cell", name), r.handler(), get_atom::value);
    runtime->run_until_idle();
    return r.as_int();
  }
};

}  // namespace

TEST_CASE("messaging: a request's continuation runs as a turn and its writes commit") {
  CellFixture f;
  Reply set, copy;
  f.runtime->request(f.handle("cell", "a"), set.handler(), set_atom::value, 42);
  f.runtime->request(f.handle("cell", "b"), copy.handler(), copy_atom::value, std::string("a"));
  f.runtime->run_until_idle();
  REQUIRE(copy.ok());
  CHECK(f.read("b") == 42);
  // Durable: a fresh runtime over the same store reads it back.
  f.expected_active = 2;
  f.stop();
  f.start();
  REQUIRE(f.runtime->register_namespace("cell", [] { return std::make_unique<Cell>(); }).ok());
  CHECK(f.read("b") == 42);
  f.expected_active = 1;
}

TEST_CASE("messaging: a send leaves only if the sending turn commits") {
  CellFixture f;
  Reply ok, failed;
  f.runtime->request(f.handle("cell", "a"), ok.handler(), tell_atom::value, std::string("b"), 1, false);
  f.runtime->run_until_idle();
  CHECK(f.read("b") == 1);
  f.runtime->request(f.handle("cell", "a"), failed.handler(), tell_atom::value, std::string("c"), 2, true);
  f.runtime->run_until_idle();
  CHECK_FALSE(failed.ok());
  CHECK(f.read("c") == 0);  // the failed turn's send was never released

  f.faulty.fail_commit();  // the next turn's commit fails: its send must not leave either
  Reply lost;
  f.runtime->request(f.handle("cell", "a"), lost.handler(), tell_atom::value, std::string("d"), 3, false);
  f.runtime->run_until_idle();
  CHECK_FALSE(lost.ok());
  CHECK(f.read("d") == 0);
  f.expected_active = 4;  // b, c, d, and a fresh a
  CHECK(f.read("a") == 0);
}

namespace {

// Reads the options CAF declares (they are protected in caf::actor_system_config).
struct DeclaredOptions : caf::actor_system_config {
  bool declares(caf::string_view name) const { return custom_options_.qualified_name_lookup(name) != nullptr; }
};

}  // namespace

TEST_CASE("runtime: idle workers block instead of sleep-polling, through a setting this CAF declares") {
  // CAF ignores (and prints about) a setting it does not declare, so a renamed key would
  // silently bring back the 50 us sleeps this setting removes.
  DeclaredOptions config;
  REQUIRE(config.declares("work-stealing.moderate-poll-attempts"));
  CHECK(caf::get_or(config, "work-stealing.moderate-poll-attempts", std::size_t{500}) != 0);
  apply_blocking_idle_wait(config);
  CHECK(caf::get_or(config, "work-stealing.moderate-poll-attempts", std::size_t{500}) == 0);
}
