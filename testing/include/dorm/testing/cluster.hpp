// dorm::testing::Cluster — several runtimes ("nodes") on one virtual clock, for tests that
// restart and redeploy the system under traffic, deterministically.
//
// Each node has its own backend and a fixed shard of ids (a hash of the id, mod N). A
// router sends every message, from the test or from an object, to the node owning its id.
// While a node is down its shard's messages are held, in order, and delivered once it is
// up again; only messages already inside a node when it crashed fail, with
// node_restarting, and the test may send them again. Nodes restart one at a time or in
// bursts, by crash() or shutdown(), optionally with a new version label (a redeploy).
//
// Single-threaded, like everything on virtual time.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "dorm/runtime/runtime.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::testing {

enum class RestartKind { crash, graceful };

struct ClusterOptions {
  std::size_t nodes = 3;
  // Applied to every node; the cluster sets virtual_clock, secret and route.
  RuntimeOptions runtime;
  // Registers namespaces on a node's runtime, at every start.
  std::function<void(Runtime&)> setup;
  // The node's backend; default: in-memory. Backends live as long as the cluster.
  std::function<std::unique_ptr<storage::Backend>(std::size_t node)> make_backend;
};

class Cluster {
 public:
  // Starts every node. Errors at start fail the REQUIRE-free way: check up(i).
  explicit Cluster(ClusterOptions options);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  VirtualClock& clock() { return clock_; }
  std::size_t size() const { return nodes_.size(); }
  std::size_t shard_of(const ObjectId& id) const;
  bool up(std::size_t node) const { return static_cast<bool>(nodes_[node].runtime); }
  // The node's runtime; precondition: up(node).
  Runtime& node(std::size_t i) { return *nodes_[i].runtime; }
  storage::Backend& backend(std::size_t i) { return *nodes_[i].backend; }

  ObjectId id_from_name(std::string_view ns, std::string_view name) const;

  // Routes to the owning node, or holds the message while that node is down.
  void deliver(const ObjectHandle& to, caf::message msg, ReplyHandler on_reply);
  template <class... Ts>
  void request(const ObjectHandle& to, ReplyHandler on_reply, Ts&&... xs) {
    deliver(to, caf::make_message(std::forward<Ts>(xs)...), std::move(on_reply));
  }

  // Stops a node (crash or graceful); its shard's messages are held from now on.
  void take_down(std::size_t node, RestartKind kind);
  // Starts a node again over its backend (with `version_label`, if given, a redeploy)
  // and delivers its held messages in order. Returns the start error, if any.
  Result<void> bring_up(std::size_t node, std::optional<std::string> version_label = {});
  // take_down, then `downtime_ms` of virtual time with the other nodes running, then
  // bring_up.
  Result<void> restart(std::size_t node, RestartKind kind, std::int64_t downtime_ms = 0,
                       std::optional<std::string> version_label = {});

  // Runs every up node until none has work left.
  std::size_t run_until_idle();
  // Advances the clock to the earliest timer of any up node and runs; false if none.
  bool run_until_next_timer();
  // When the earliest timer of any up node fires; none if no node has one.
  std::optional<std::int64_t> next_timer_ms();
  // Advances the clock by `ms`, running timers in order on the way.
  void advance(std::int64_t ms);

  std::size_t held(std::size_t node) const { return nodes_[node].held.size(); }

 private:
  struct Held {
    ObjectHandle to;
    caf::message msg;
    ReplyHandler on_reply;
  };
  struct Node {
    std::unique_ptr<storage::Backend> backend;
    std::unique_ptr<Runtime> runtime;
    std::string version_label;
    std::deque<Held> held;
  };
  Result<void> start_node(std::size_t i);
  // Moves the clock to `at` (or fires what is already due) and runs every node.
  void step_to(std::int64_t at);

  ClusterOptions options_;
  VirtualClock clock_;
  std::string secret_;
  std::vector<Node> nodes_;
};

}  // namespace dorm::testing
