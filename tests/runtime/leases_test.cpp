// Scale-out on virtual time: two runtimes ("nodes") share one memory: store, whose leases
// (storage/leases.hpp) keep one activation per object across them. Every turn of the
// counter object appends to a ledger which node ran it, under which lease token, at which
// count: the ledger proves no two nodes ever ran the object at once, and no turn of a node
// that lost its lease was acknowledged.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#include "dorm/runtime/errors.hpp"
#include "dorm/runtime/keys.hpp"
#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/memory_backend.hpp"

using namespace dorm;

namespace {

using bump_atom = caf::atom_constant<caf::atom("bump")>;
using arm_atom = caf::atom_constant<caf::atom("arm")>;

struct LedgerLine {
  std::string object;
  std::string node;
  std::uint64_t generation;  // the activation's epoch generation: its lease's
  int count;
};

struct Ledger {
  std::vector<LedgerLine> lines;
  std::map<std::string, std::vector<std::string>> starts;  // node -> start reasons
  std::vector<std::string> alarms;                          // node of each alarm delivery
};

class Counter : public DurableObject {
 public:
  Counter(std::string node, Ledger* ledger) : node_(std::move(node)), ledger_(ledger) {}
  void on_start(StartReason reason) override {
    ledger_->starts[node_].push_back(to_string(reason));
    auto v = get("n");
    if (!v) throw std::runtime_error("get failed");
    n_ = *v ? std::stoi(**v) : 0;
  }
  caf::behavior behavior() override {
    return {
        [this](bump_atom) -> int {
          ++n_;
          if (!put("n", std::to_string(n_))) throw std::runtime_error("put failed");
          ledger_->lines.push_back({id().to_string(), node_, epoch().generation, n_});
          return n_;
        },
        [this](arm_atom, std::int64_t due) -> int {
          if (!set_alarm(due)) throw std::runtime_error("set_alarm failed");
          return n_;
        },
    };
  }
  void on_alarm(const AlarmInfo&) override { ledger_->alarms.push_back(node_); }

 private:
  std::string node_;
  Ledger* ledger_;
  int n_ = 0;
};

struct Answer {
  bool arrived = false;
  caf::expected<caf::message> value{caf::error{}};
};

// A node's view of the shared store whose lease renewals can be made to fail, as they do
// for a node that is paused or cut off from the store (leases themselves are the storage
// layer's, tested by the lease conformance kit).
class NodeView final : public storage::BackendWrapper, public storage::LeaseTable {
 public:
  explicit NodeView(storage::MemoryBackend& store) : BackendWrapper(store), store_(store) {}
  bool renewals_fail = false;

  storage::LeaseTable* leases() override { return this; }
  Result<storage::LeaseGrant> acquire(std::string_view object, std::string_view node,
                                      std::int64_t now, std::int64_t until) override {
    return store_.acquire(object, node, now, until);
  }
  Result<std::vector<std::string>> renew(std::string_view node,
                                         std::span<const storage::HeldLease> held,
                                         std::int64_t until) override {
    if (renewals_fail) return Error{ErrorCode::unavailable, "the store is out of reach"};
    return store_.renew(node, held, until);
  }
  Result<void> release(std::string_view object, std::uint64_t token) override {
    return store_.release(object, token);
  }
  Result<std::optional<storage::LeaseHolder>> holder(std::string_view object) override {
    return store_.holder(object);
  }
  Result<void> announce(const storage::NodeRecord& node) override { return store_.announce(node); }
  Result<std::vector<storage::NodeRecord>> nodes() override { return store_.nodes(); }
  Result<void> retire(std::string_view node) override { return store_.retire(node); }

 private:
  storage::MemoryBackend& store_;
};

class TwoNodes {
 public:
  storage::MemoryBackend store;
  std::map<std::string, std::unique_ptr<NodeView>> views;
  VirtualClock clock;
  Ledger ledger;
  std::map<std::string, std::unique_ptr<Runtime>> nodes;
  const std::string secret = std::string(32, 'k');

  RuntimeOptions options(const std::string& node) {
    RuntimeOptions o;
    o.virtual_clock = &clock;
    o.virtual_clock_rank = node[0] - 'a';
    o.secret = secret;
    o.node.id = node;
    o.node.address = "http://" + node + ".test:8080";
    o.node.lease = std::chrono::milliseconds(10'000);
    o.node.renew_every = std::chrono::milliseconds(3'000);
    return o;
  }

  Runtime& start(const std::string& node) {
    auto& view = views[node];
    if (!view) view = std::make_unique<NodeView>(store);
    auto rt = Runtime::start(*view, options(node));
    REQUIRE_MESSAGE(rt.ok(), (rt.ok() ? "" : rt.error().describe()));
    auto& runtime = *(nodes[node] = std::move(rt).value());
    Ledger* log = &ledger;
    REQUIRE(runtime
                .register_namespace("counter",
                                    [node, log] { return std::make_unique<Counter>(node, log); })
                .ok());
    return runtime;
  }

  // Sends a bump; its answer arrives in the returned Answer (whenever it does).
  std::shared_ptr<Answer> send_bump(const std::string& node, const std::string& object = "c1") {
    auto& rt = *nodes.at(node);
    auto id = rt.id_from_name("counter", object);
    auto handle = rt.get(id);
    REQUIRE(handle.ok());
    auto answer = std::make_shared<Answer>();
    rt.request(*handle, [this, answer, node, id](caf::expected<caf::message> r) {
      answer->arrived = true;
      answer->value = std::move(r);
      if (answer->value) acknowledged.insert({id.to_string(), node, answer->value->get_as<int>(0)});
    }, bump_atom::value);
    return answer;
  }

  Answer bump(const std::string& node, const std::string& object = "c1") {
    auto answer = send_bump(node, object);
    settle();
    REQUIRE(answer->arrived);
    return *answer;
  }

  void arm(const std::string& node, std::int64_t due, const std::string& object = "c1") {
    auto& rt = *nodes.at(node);
    auto handle = rt.get(rt.id_from_name("counter", object));
    REQUIRE(handle.ok());
    Answer answer;
    rt.request(*handle, [&answer](caf::expected<caf::message> r) {
      answer.arrived = true;
      answer.value = std::move(r);
    }, arm_atom::value, due);
    settle();
    REQUIRE(answer.arrived);
    REQUIRE(answer.value);
  }

  // Runs every node's queued work until none has any left.
  void settle() {
    for (bool busy = true; busy;) {
      busy = false;
      for (auto& [name, rt] : nodes) {
        if (rt && rt->run_until_idle() > 0) busy = true;
      }
    }
  }

  // Moves virtual time on by `ms`, firing each node's timers on the way.
  void advance(std::int64_t ms) {
    clock.advance(ms);
    settle();
  }

  std::string lease_object(const std::string& object = "c1") {
    auto& rt = *nodes.begin()->second;
    auto id = rt.id_from_name("counter", object);
    return keys::object_prefix("counter", id.body());
  }

  // The ledger's proof: counts rise by one from turn to turn, whichever node ran them, and
  // once a newer lease (generation) has run, no turn of an older one follows.
  //
  // Only acknowledged turns count: a turn that ran on a node that had lost its lease is in
  // the ledger (it ran) but its commit was refused and it was never answered.
  void check_ledger() {
    std::map<std::string, const LedgerLine*> last;  // per object
    for (const auto& line : ledger.lines) {
      if (!acknowledged.contains({line.object, line.node, line.count})) continue;
      if (auto* before = last[line.object]) {
        CHECK(line.count == before->count + 1);
        CHECK(line.generation >= before->generation);
      }
      last[line.object] = &line;
    }
  }
  std::set<std::tuple<std::string, std::string, int>> acknowledged;  // object, node, count
};

int value_of(const Answer& a) {
  REQUIRE(a.value);
  return a.value->get_as<int>(0);
}

}  // namespace

TEST_CASE("leases: an object runs on one node; another node's message is refused naming it") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  CHECK(value_of(t.bump("a")) == 2);

  auto refused = t.bump("b");
  REQUIRE_FALSE(refused.value);
  CHECK(is(refused.value.error(), RuntimeErrc::not_owner));
  auto owner = owner_of(refused.value.error());
  REQUIRE(owner);
  CHECK(owner->node == "a");
  CHECK(owner->address == "http://a.test:8080");
  CHECK(owner->expires_ms > t.clock.now_ms());
  CHECK(describe(refused.value.error()).find("held by node a") != std::string::npos);
  CHECK(t.nodes["b"]->active_objects() == 0);

  // Another object is free for b.
  CHECK(value_of(t.bump("b", "c2")) == 1);
  // And a's renewals keep its lease for as long as it runs, past many lease durations.
  t.advance(35'000);
  CHECK(is(t.bump("b").value.error(), RuntimeErrc::not_owner));
  CHECK(value_of(t.bump("a")) == 3);
  t.check_ledger();
}

TEST_CASE("leases: after a node dies, another takes its objects over once the lease expires") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  CHECK(value_of(t.bump("a")) == 2);
  auto held = t.store.holder(t.lease_object());
  REQUIRE(held.ok());
  REQUIRE(held.value());
  const auto expires = held.value()->expires_ms;

  t.nodes["a"]->crash();  // releases nothing: its leases run out
  t.nodes.erase("a");
  CHECK(is(t.bump("b").value.error(), RuntimeErrc::not_owner));
  t.advance(expires - t.clock.now_ms());
  auto taken = t.bump("b");
  CHECK(value_of(taken) == 3);  // every commit a acknowledged is there
  REQUIRE(t.ledger.lines.size() == 3);
  CHECK(t.ledger.lines[2].node == "b");
  CHECK(t.ledger.lines[2].generation > t.ledger.lines[1].generation);
  t.check_ledger();
}

TEST_CASE("leases: a message for a dead node's object waits for its lease to run out") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  const auto expires = t.store.holder(t.lease_object()).value()->expires_ms;
  t.nodes["a"]->crash();
  t.nodes.erase("a");
  // a's last heartbeat is two renewal periods old: b presumes it dead and waits for its
  // lease instead of refusing.
  t.advance(6'001);
  auto waiting = t.send_bump("b");
  t.settle();
  CHECK_FALSE(waiting->arrived);
  t.advance(expires - t.clock.now_ms());
  REQUIRE(waiting->arrived);
  CHECK(value_of(*waiting) == 2);
  CHECK(t.ledger.starts["b"].size() == 1);
  t.check_ledger();
}

TEST_CASE("leases: a node presumed dead is waited out; if it lives and renews, the wait ends in a refusal") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  CHECK(value_of(t.bump("a", "c2")) == 1);
  const auto expires = t.store.holder(t.lease_object()).value()->expires_ms;

  // b could not reach a (a forward failed): a's heartbeat is fresh, yet b waits for its
  // lease instead of refusing. a is alive after all and renews: at the expiry b saw, the
  // lease is a's still, and b refuses naming it.
  t.nodes["b"]->presume_dead("a");
  auto waiting = t.send_bump("b");
  t.settle();
  CHECK_FALSE(waiting->arrived);
  t.advance(expires - t.clock.now_ms());
  REQUIRE(waiting->arrived);
  REQUIRE_FALSE(waiting->value);
  CHECK(owner_of(waiting->value.error())->node == "a");
  CHECK(value_of(t.bump("a")) == 2);

  // Now a dies for real, with a fresh heartbeat: b, presuming it dead, takes c2 over once
  // the lease runs out, without waiting for the heartbeat to go stale first.
  const auto c2_expires = t.store.holder(t.lease_object("c2")).value()->expires_ms;
  t.nodes["a"]->crash();
  t.nodes.erase("a");
  t.nodes["b"]->presume_dead("a");
  auto taken = t.send_bump("b", "c2");
  t.settle();
  CHECK_FALSE(taken->arrived);
  t.advance(c2_expires - t.clock.now_ms());
  REQUIRE(taken->arrived);
  CHECK(value_of(*taken) == 2);
  t.check_ledger();
}

TEST_CASE("leases: a node handing over releases each lease after the object's last turn") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  CHECK(t.nodes["a"]->active_objects() == 1);
  REQUIRE(t.store.holder(t.lease_object()).value());

  // A message already waiting for b's activation, which waits on a (presumed dead) ...
  t.nodes["b"]->presume_dead("a");
  auto waiting = t.send_bump("b");
  t.settle();
  CHECK_FALSE(waiting->arrived);
  const auto before = t.clock.now_ms();

  // ... and a's message sent just before it stops: answered there, then c1 leaves a.
  auto last = t.send_bump("a");
  t.nodes["a"]->hand_over();
  t.settle();
  REQUIRE(last->arrived);
  CHECK(value_of(*last) == 2);
  CHECK(t.nodes["a"]->active_objects() == 0);
  CHECK_FALSE(t.store.holder(t.lease_object()).value());

  // b's activation asks again one renewal period later and takes c1, long before a's lease
  // would have run out.
  t.advance(3'000);
  REQUIRE(waiting->arrived);
  CHECK(value_of(*waiting) == 3);
  CHECK(t.clock.now_ms() - before < 10'000);

  // Nothing activates on a any more: a message for another object is sent on to b, the
  // one live peer, which serves it.
  auto refused = t.bump("a", "c3");
  REQUIRE_FALSE(refused.value);
  auto peer = owner_of(refused.value.error());
  REQUIRE(peer);
  CHECK(peer->node == "b");
  CHECK(peer->address == "http://b.test:8080");
  CHECK(t.nodes["a"]->active_objects() == 0);
  CHECK(value_of(t.bump("b", "c3")) == 1);
  t.check_ledger();
}

TEST_CASE("leases: a node handing over with no live peer refuses new objects as restarting") {
  TwoNodes t;
  t.start("a");
  t.nodes["a"]->hand_over();
  auto refused = t.bump("a");
  REQUIRE_FALSE(refused.value);
  CHECK(is(refused.value.error(), RuntimeErrc::node_restarting));
  CHECK(t.nodes["a"]->active_objects() == 0);
}

TEST_CASE("leases: a node that lost its lease can commit nothing and answers nothing") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  // a cannot reach the store to renew, as a node that was paused or cut off: its lease runs
  // out and b takes the object over.
  t.views["a"]->renewals_fail = true;
  t.advance(10'000);
  CHECK(value_of(t.bump("b")) == 2);

  // a still has the object in memory; its turn runs, but its commit is refused and its
  // answer never released.
  auto late = t.bump("a");
  REQUIRE_FALSE(late.value);
  CHECK_FALSE(is(late.value.error(), RuntimeErrc::not_owner));
  CHECK(value_of(t.bump("b")) == 3);
  t.check_ledger();
  // a's refused turn ran (the ledger has it) and was never acknowledged.
  REQUIRE(t.ledger.lines.size() == 4);
  CHECK(t.ledger.lines[2].node == "a");
  CHECK(t.ledger.lines[2].count == 2);
  CHECK_FALSE(t.acknowledged.contains({t.ledger.lines[2].object, "a", 2}));

  CHECK(t.nodes["a"]->active_objects() == 0);  // the refused commit reset it
  t.views["a"]->renewals_fail = false;
  CHECK(is(t.bump("a").value.error(), RuntimeErrc::not_owner));
}

TEST_CASE("leases: a renewal that finds the lease gone resets the activation at once") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  CHECK(value_of(t.bump("a", "c2")) == 1);
  t.views["a"]->renewals_fail = true;
  t.advance(10'000);
  CHECK(value_of(t.bump("b")) == 2);  // c1 taken over; c2 stays a's (nobody asked)
  CHECK(t.nodes["a"]->active_objects() == 2);
  t.views["a"]->renewals_fail = false;
  t.advance(3'000);  // a's next renewal: c1 is lost, c2 renewed
  CHECK(t.nodes["a"]->active_objects() == 1);
  CHECK(value_of(t.bump("a", "c2")) == 2);
  CHECK(is(t.bump("a").value.error(), RuntimeErrc::not_owner));
  t.check_ledger();
}

TEST_CASE("leases: an activation that ends releases its lease at once") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  CHECK(value_of(t.bump("a")) == 1);
  t.nodes["a"]->shutdown();  // graceful: on_stop, leases released, node retired
  t.nodes.erase("a");
  CHECK(value_of(t.bump("b")) == 2);  // no wait for expiry
  auto nodes = t.store.nodes();
  REQUIRE(nodes.ok());
  REQUIRE(nodes.value().size() == 1);
  CHECK(nodes.value()[0].node == "b");
  CHECK(nodes.value()[0].address == "http://b.test:8080");
}

TEST_CASE("leases: a node id needs a store with leases") {
  storage::MemoryBackend memory;
  struct NoLeases : storage::BackendWrapper {
    using storage::BackendWrapper::BackendWrapper;
    storage::LeaseTable* leases() override { return nullptr; }
  } without(memory);
  VirtualClock clock;
  RuntimeOptions o;
  o.virtual_clock = &clock;
  o.node.id = "a";
  auto rt = Runtime::start(without, o);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.error().code == ErrorCode::invalid_argument);
  CHECK(rt.error().message.find("has no leases") != std::string::npos);
  // Nothing was written.
  CHECK(memory.scan({})->empty());
}

TEST_CASE("leases: only the holder delivers an object's alarm; the other node stays away") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  // Due after b's first rescan of the index (one lease period in), so b knows it too and
  // tries: a holds the object, so b puts its delivery off instead of failing an attempt.
  t.arm("a", t.clock.now_ms() + 15'000);
  t.advance(10'000);  // b reads the index again: it has a's alarm now
  t.advance(6'000);
  CHECK(t.ledger.alarms == std::vector<std::string>{"a"});
  CHECK(t.nodes["b"]->active_objects() == 0);
  auto tried = [&] { return t.nodes["b"]->stats().namespaces.at(0).activations; };
  CHECK(tried() == 1);  // b's delivery, refused: the object is a's
  // a lets the object go; b's put-off delivery finds the alarm gone and activates nothing.
  t.nodes["a"]->shutdown();
  t.nodes.erase("a");
  t.advance(30'000);
  CHECK(t.ledger.alarms == std::vector<std::string>{"a"});
  CHECK(t.nodes["b"]->active_objects() == 0);
  CHECK(tried() == 1);
}

TEST_CASE("leases: a dead node's alarms are delivered by the node that takes over") {
  TwoNodes t;
  t.start("a");
  t.start("b");
  t.arm("a", t.clock.now_ms() + 5'000);
  t.nodes["a"]->crash();
  t.nodes.erase("a");
  t.advance(6'000);  // due, but a's lease has not run out: b waits
  CHECK(t.ledger.alarms.empty());
  t.advance(10'000);
  CHECK(t.ledger.alarms == std::vector<std::string>{"b"});
  CHECK(t.nodes["b"]->active_objects() == 1);
}

// Three nodes under traffic while each in turn is restarted, crashed or stopped gracefully.
// A caller whose message was refused with not_owner sends it to the node named (as a front
// end that forwards would); one refused because its node died or reset sends it again to a
// live node. Every call is answered in the end, and the ledger shows each object's
// acknowledged counts rising by one across all nodes, under ever newer leases.
TEST_CASE("leases: rolling restarts of three nodes under traffic leave no call unanswered") {
  TwoNodes t;
  const std::vector<std::string> names{"a", "b", "c"};
  for (const auto& n : names) t.start(n);
  std::mt19937 rng(27);
  struct Call {
    std::string object;
    std::shared_ptr<Answer> answer;
  };
  std::vector<Call> calls;
  std::map<std::string, int> acked;  // object -> acknowledged bumps
  int forwarded = 0, resent = 0;
  auto live_node = [&] {
    std::vector<std::string> live;
    for (const auto& [name, rt] : t.nodes) live.push_back(name);
    return live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
  };
  auto send = [&](const std::string& object, const std::string& node) {
    calls.push_back({object, t.send_bump(node, object)});
  };
  // Settles what has been answered; sends again what must be.
  auto pump = [&] {
    std::vector<Call> open;
    for (auto& call : calls) {
      if (!call.answer->arrived) {
        open.push_back(std::move(call));
        continue;
      }
      if (call.answer->value) {
        ++acked[call.object];
        continue;
      }
      const auto& error = call.answer->value.error();
      auto owner = owner_of(error);
      if (owner && t.nodes.contains(owner->node)) {
        ++forwarded;
        open.push_back({call.object, t.send_bump(owner->node, call.object)});
      } else {
        REQUIRE_MESSAGE((owner || is(error, RuntimeErrc::node_restarting) ||
                         is(error, RuntimeErrc::object_reset) || is(error, RuntimeErrc::stopped)),
                        describe(error));
        ++resent;
        open.push_back({call.object, t.send_bump(live_node(), call.object)});
      }
    }
    calls = std::move(open);
    t.settle();
  };
  for (int round = 0; round < 9; ++round) {
    for (int i = 0; i < 24; ++i) {
      send("o" + std::to_string(std::uniform_int_distribution<int>(0, 9)(rng)), live_node());
    }
    t.settle();
    pump();
    const std::string& victim = names[static_cast<std::size_t>(round) % names.size()];
    // Calls still queued on the victim when it goes: a crash answers them node_restarting.
    for (int i = 0; i < 6; ++i) send("o" + std::to_string(i), victim);
    if (round % 3 == 0) {
      t.nodes[victim]->crash();
    } else {
      // A graceful stop hands the victim's objects over first, under traffic.
      t.nodes[victim]->hand_over();
      pump();
      t.nodes[victim]->shutdown();
    }
    t.nodes.erase(victim);
    pump();
    t.advance(1'000);
    pump();
    t.start(victim);
    for (int step = 0; step < 12; ++step) {
      t.advance(1'000);
      pump();
    }
  }
  for (int step = 0; step < 60 && !calls.empty(); ++step) {
    t.advance(1'000);
    pump();
  }
  CHECK(calls.empty());
  int total = 0;
  for (const auto& [object, count] : acked) total += count;
  MESSAGE(total << " calls answered; " << forwarded << " sent on to the holder, " << resent
                << " sent again after their node went");
  CHECK(forwarded > 0);
  CHECK(resent > 0);
  t.check_ledger();
  // What each object stored is what its callers were told, one count per acknowledged call.
  for (const auto& [object, count] : acked) {
    auto& any = *t.nodes.begin()->second;
    auto id = any.id_from_name("counter", object);
    auto stored = t.store.get(keys::object_prefix("counter", id.body()) + keys::kObjectData + "n");
    REQUIRE(stored.ok());
    REQUIRE(stored.value());
    CHECK(std::stoi(*stored.value()) == count);
  }
}
