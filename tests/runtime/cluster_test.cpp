// A rolling deploy on a 3-node Cluster under traffic: crash, graceful, a burst of two, a
// redeploy. Messages for a restarting shard are held and answered; only messages inside a
// crashed node fail (node_restarting) and are sent again; nothing is answered twice, and
// each object answers in the order its messages were (last) sent.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "dorm/testing/cluster.hpp"
#include "dorm/runtime/errors.hpp"
#include "numbered.hpp"

using namespace dorm;
using dorm::testing::Cluster;
using dorm::testing::RestartKind;

namespace {

using bump_atom = caf::atom_constant<caf::atom("bump")>;

struct Trace {
  std::map<std::string, std::vector<std::string>> starts;  // object -> start reasons
  int handled_before_start = 0;
};

class Counter : public DurableObject {
 public:
  explicit Counter(Trace* trace) : trace_(trace) {}
  void on_start(StartReason reason) override {
    started_ = true;
    trace_->starts[id().to_string()].push_back(to_string(reason));
    auto v = get("n");
    if (!v) throw std::runtime_error("get failed");
    n_ = *v ? std::stoi(**v) : 0;
  }
  caf::behavior behavior() override {
    return {[this](bump_atom, int send_index) -> int {
      if (!started_) ++trace_->handled_before_start;
      ++n_;
      if (!put("n", std::to_string(n_))) throw std::runtime_error("put failed");
      return send_index;
    }};
  }

 private:
  Trace* trace_;
  bool started_ = false;
  int n_ = 0;
};

struct Traffic {
  explicit Traffic(Cluster& c) : cluster(c) {}
  Cluster& cluster;
  std::vector<ObjectHandle> objects;
  int next_send = 0;
  std::map<int, int> object_of;               // send index -> object
  std::map<int, int> answers;                 // send index -> successful answers
  std::map<int, std::vector<int>> answered;   // object -> send indexes, in answer order
  std::vector<int> to_retry;                  // failed with node_restarting
  int other_errors = 0;

  void send(int object) {
    int index = next_send++;
    object_of[index] = object;
    cluster.request(objects[static_cast<std::size_t>(object)],
                    [this, index, object](caf::expected<caf::message> r) {
                      if (r) {
                        ++answers[index];
                        answered[object].push_back(r->get_as<int>(0));
                      } else if (is(r.error(), RuntimeErrc::node_restarting)) {
                        to_retry.push_back(index);
                      } else {
                        ++other_errors;
                      }
                    },
                    bump_atom::value, index);
  }
  void round() {
    for (int o = 0; o < static_cast<int>(objects.size()); ++o) send(o);
  }
  void retry() {
    auto again = std::move(to_retry);
    to_retry.clear();
    for (int index : again) send(object_of[index]);
  }
};

}  // namespace

TEST_CASE("cluster: a rolling deploy under traffic loses nothing and answers nothing twice") {
  Trace trace;
  dorm::testing::ClusterOptions options;
  options.nodes = 3;
  options.runtime.version_label = "v1";
  options.setup = [&](Runtime& rt) {
    REQUIRE(rt.register_namespace("counter", [&] { return std::make_unique<Counter>(&trace); }).ok());
  };
  Cluster cluster(options);
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(cluster.up(i));

  Traffic traffic(cluster);
  std::set<std::size_t> shards;
  for (int o = 0; o < 30; ++o) {
    auto id = cluster.id_from_name("counter", dorm::testing::numbered("c", o));
    shards.insert(cluster.shard_of(id));
    traffic.objects.push_back(ObjectHandle{id});
  }
  REQUIRE(shards.size() == 3);  // every node owns some of the objects

  auto settle = [&] {
    cluster.run_until_idle();
    while (!traffic.to_retry.empty()) {
      traffic.retry();
      cluster.run_until_idle();
    }
  };

  traffic.round();
  settle();

  // 1. Crash node 0 with a round of traffic inside it, unhandled.
  traffic.round();
  cluster.take_down(0, RestartKind::crash);
  traffic.round();  // held for node 0
  CHECK(cluster.held(0) > 0);
  cluster.run_until_idle();
  cluster.advance(5'000);
  REQUIRE(cluster.bring_up(0).ok());
  settle();

  // 2. Graceful restart of node 1, traffic arriving while it is down.
  traffic.round();
  cluster.take_down(1, RestartKind::graceful);
  traffic.round();
  cluster.advance(2'000);
  REQUIRE(cluster.bring_up(1).ok());
  settle();

  // 3. A burst: nodes 0 and 2 down together, one crashed with work inside.
  traffic.round();
  cluster.take_down(2, RestartKind::crash);
  cluster.take_down(0, RestartKind::graceful);
  traffic.round();
  cluster.advance(3'000);
  REQUIRE(cluster.bring_up(2).ok());
  REQUIRE(cluster.bring_up(0).ok());
  settle();

  // 4. Redeploy node 1 with a new version.
  traffic.round();
  REQUIRE(cluster.restart(1, RestartKind::graceful, 1'000, std::string("v2")).ok());
  traffic.round();
  settle();

  CHECK(traffic.other_errors == 0);
  CHECK(trace.handled_before_start == 0);
  // Every message that was not lost to a crash was answered exactly once; every one that
  // was lost was sent again and that copy answered.
  for (const auto& entry : traffic.answers) CHECK(entry.second == 1);
  std::set<int> unanswered;
  for (int i = 0; i < traffic.next_send; ++i) {
    if (!traffic.answers.count(i)) unanswered.insert(i);
  }
  // The unanswered ones are exactly the crash casualties (each retried under a new index).
  int retries = traffic.next_send - static_cast<int>(traffic.answers.size());
  CHECK(static_cast<int>(unanswered.size()) == retries);
  CHECK(retries > 0);  // the crashes did catch work in flight
  // Per object, answers came in the order the answered messages were sent.
  for (const auto& entry : traffic.answered) {
    int object = entry.first;
    CAPTURE(object);
    CHECK(std::is_sorted(entry.second.begin(), entry.second.end()));
  }
  // Start reasons seen across the deploy.
  std::set<std::string> reasons;
  for (auto& [id, list] : trace.starts) reasons.insert(list.begin(), list.end());
  CHECK(reasons.count("first"));
  CHECK(reasons.count("after_crash"));
  CHECK(reasons.count("after_shutdown"));
  CHECK(reasons.count("after_redeploy"));
}

namespace {

using ask_atom = caf::atom_constant<caf::atom("ask")>;
using late_atom = caf::atom_constant<caf::atom("late")>;
using peek_atom = caf::atom_constant<caf::atom("peek")>;

// Asks another object and, when the answer comes, writes it down.
class Asker : public DurableObject {
 public:
  caf::behavior behavior() override {
    return {
        [this](ask_atom, std::string other) -> int {
          request(ObjectHandle{runtime().id_from_name("asker", other)},
                  [this](caf::expected<caf::message> r) {
                    if (r) {
                      if (!put("late", "written by the continuation")) throw std::runtime_error("put failed");
                    }
                  },
                  late_atom::value);
          return 0;
        },
        [](late_atom) -> int { return 1; },
        [this](peek_atom) -> std::string {
          auto v = get("late");
          if (!v) throw std::runtime_error("get failed");
          return v->value_or("");
        },
    };
  }
};

}  // namespace

TEST_CASE("eviction fences in-memory work: a reply to an evicted activation does not run") {
  dorm::testing::ClusterOptions options;
  options.nodes = 2;
  options.setup = [](Runtime& rt) {
    NamespaceOptions ns;
    ns.idle_timeout = std::chrono::seconds(1);
    REQUIRE(rt.register_namespace("asker", [] { return std::make_unique<Asker>(); }, ns).ok());
  };
  Cluster cluster(options);
  // Two objects on different nodes.
  ObjectId a, b;
  for (int i = 0;; ++i) {
    a = cluster.id_from_name("asker", dorm::testing::numbered("a", i));
    b = cluster.id_from_name("asker", dorm::testing::numbered("b", i));
    if (cluster.shard_of(a) != cluster.shard_of(b)) break;
  }
  std::size_t node_b = cluster.shard_of(b);
  std::string b_name;
  for (int i = 0;; ++i) {
    if (cluster.id_from_name("asker", dorm::testing::numbered("b", i)) == b) {
      b_name = dorm::testing::numbered("b", i);
      break;
    }
  }
  cluster.take_down(node_b, RestartKind::graceful);  // b's answer will be late
  bool asked = false;
  cluster.request(ObjectHandle{a}, [&](caf::expected<caf::message> r) { asked = static_cast<bool>(r); },
                  ask_atom::value, b_name);
  cluster.run_until_idle();
  REQUIRE(asked);
  CHECK(cluster.held(node_b) == 1);
  cluster.advance(2'000);  // a is idle for 1 s and is evicted, its request still pending
  CHECK(cluster.node(cluster.shard_of(a)).active_objects() == 0);
  REQUIRE(cluster.bring_up(node_b).ok());
  cluster.run_until_idle();  // b answers; the continuation's activation is gone
  std::string seen = "unset";
  cluster.request(ObjectHandle{a}, [&](caf::expected<caf::message> r) {
    if (r) seen = r->get_as<std::string>(0);
  }, peek_atom::value);
  cluster.run_until_idle();
  CHECK(seen == "");  // the late continuation never wrote
}
