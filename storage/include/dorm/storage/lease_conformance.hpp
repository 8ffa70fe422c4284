// The lease conformance kit: doctest cases every Backend with leases (leases.hpp) must pass.
//
// Include <doctest/doctest.h> and dorm/storage/conformance.hpp first, then this header, and
// instantiate it once per backend, with the same kind of Factory as the backend kit:
//
//   DORM_LEASE_CONFORMANCE("mystore", factory)
//
// Each case opens the store once per simulated node when the store is shared between
// processes (`shared` true: every open of `dir` is another node's handle on the same data),
// or once for all nodes (memory:, where nodes are runtimes sharing one handle). What it
// checks is the contract in leases.hpp: grants and refusals naming the holder, take-over
// after expiry, strictly increasing tokens, renewals that report lost leases, node records,
// and fenced commits that apply nothing — also while another node takes the lease over.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dorm/storage/leases.hpp"

#ifndef DORM_BACKEND_CONFORMANCE
#error "include dorm/storage/conformance.hpp before dorm/storage/lease_conformance.hpp"
#endif

namespace dorm::storage::conformance {

// Two nodes' handles on one store (the same handle twice for a store shared in-process).
struct TwoNodes {
  std::unique_ptr<Backend> first, second_owned;
  Backend* second = nullptr;

  TwoNodes(const Factory& f, const std::string& dir, bool shared) {
    first = must_open(f, dir);
    if (shared) {
      second_owned = must_open(f, dir);
      second = second_owned.get();
    } else {
      second = first.get();
    }
    REQUIRE(first->leases() != nullptr);
    REQUIRE(second->leases() != nullptr);
  }
  LeaseTable& a() { return *first->leases(); }
  LeaseTable& b() { return *second->leases(); }
};

inline LeaseGrant must_acquire(LeaseTable& t, std::string_view object, std::string_view node,
                               std::int64_t now, std::int64_t until) {
  auto r = t.acquire(object, node, now, until);
  if (!r.ok()) FAIL("acquire failed: " << r.error().describe());
  return std::move(r).value();
}

inline void grants_refusals_and_takeover(const Factory& f, bool shared) {
  ScratchDir dir;
  TwoNodes nodes(f, dir.path(), shared);
  REQUIRE(nodes.a().announce(NodeRecord{"node-a", "http://127.0.0.1:1001", 5}).ok());

  auto first = must_acquire(nodes.a(), "obj/1", "node-a", 0, 1000);
  REQUIRE(first.granted());
  CHECK_FALSE(first.holder);

  // Held and not expired: another node is refused and learns who holds it, until when.
  auto refused = must_acquire(nodes.b(), "obj/1", "node-b", 999, 2000);
  CHECK_FALSE(refused.granted());
  REQUIRE(refused.holder);
  CHECK(*refused.holder == LeaseHolder{"node-a", "http://127.0.0.1:1001", first.token, 1000, 5});

  auto seen = nodes.b().holder("obj/1");
  REQUIRE(seen.ok());
  REQUIRE(seen.value());
  CHECK(seen.value()->token == first.token);
  auto none = nodes.b().holder("obj/never");
  REQUIRE(none.ok());
  CHECK_FALSE(none.value());

  // Another object is independent.
  auto other = must_acquire(nodes.b(), "obj/2", "node-b", 999, 2000);
  REQUIRE(other.granted());
  CHECK(other.token > first.token);

  // Expired: taken over, with a greater token; the old holder is refused now.
  auto taken = must_acquire(nodes.b(), "obj/1", "node-b", 1000, 3000);
  REQUIRE(taken.granted());
  CHECK(taken.token > other.token);
  auto back = must_acquire(nodes.a(), "obj/1", "node-a", 1500, 4000);
  CHECK_FALSE(back.granted());
  REQUIRE(back.holder);
  CHECK(back.holder->node == "node-b");
  CHECK(back.holder->address.empty());  // node-b never announced itself
  CHECK(back.holder->heartbeat_ms == 0);

  // A node takes its own lease again at once (its earlier activation died), new token.
  auto again = must_acquire(nodes.b(), "obj/1", "node-b", 1500, 3500);
  REQUIRE(again.granted());
  CHECK(again.token > taken.token);

  // Released: free for anyone at once.
  REQUIRE(nodes.b().release("obj/1", taken.token).ok());  // a stale token releases nothing
  CHECK(must_acquire(nodes.a(), "obj/1", "node-a", 1600, 4000).holder);
  REQUIRE(nodes.b().release("obj/1", again.token).ok());
  auto after = must_acquire(nodes.a(), "obj/1", "node-a", 1600, 4000);
  REQUIRE(after.granted());
  CHECK(after.token > again.token);

  // Bad input changes nothing.
  CHECK(nodes.a().acquire("", "node-a", 0, 10).error().code == ErrorCode::invalid_argument);
  CHECK(nodes.a().acquire("obj/3", "", 0, 10).error().code == ErrorCode::invalid_argument);
  CHECK(nodes.a().acquire("obj/3", "node-a", 10, 10).error().code == ErrorCode::invalid_argument);
  auto untouched = nodes.a().holder("obj/3");
  REQUIRE(untouched.ok());
  CHECK_FALSE(untouched.value());
}

inline void fenced_commits(const Factory& f, bool shared) {
  ScratchDir dir;
  TwoNodes nodes(f, dir.path(), shared);
  auto a = must_acquire(nodes.a(), "obj", "node-a", 0, 100);
  REQUIRE(a.granted());
  WriteBatch one;
  one.put("obj/k", "from a");
  REQUIRE(nodes.first->commit_leased(one, "obj", a.token).ok());

  auto b = must_acquire(nodes.b(), "obj", "node-b", 100, 200);
  REQUIRE(b.granted());
  WriteBatch late;
  late.put("obj/k", "late from a");
  late.put("obj/other", "x");
  auto refused = nodes.first->commit_leased(late, "obj", a.token);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::fenced);
  auto k = nodes.second->get("obj/k");
  REQUIRE(k.ok());
  CHECK(k.value() == std::optional<std::string>("from a"));
  CHECK(nodes.second->get("obj/other").value() == std::nullopt);

  WriteBatch mine;
  mine.put("obj/k", "from b");
  REQUIRE(nodes.second->commit_leased(mine, "obj", b.token).ok());
  CHECK(nodes.first->get("obj/k").value() == std::optional<std::string>("from b"));

  // A token of no lease at all (never granted, or released) fences too.
  CHECK(nodes.first->commit_leased(mine, "nobody", a.token).error().code == ErrorCode::fenced);
  REQUIRE(nodes.second->leases()->release("obj", b.token).ok());
  CHECK(nodes.second->commit_leased(mine, "obj", b.token).error().code == ErrorCode::fenced);
}

inline void renewals(const Factory& f, bool shared) {
  ScratchDir dir;
  TwoNodes nodes(f, dir.path(), shared);
  auto x = must_acquire(nodes.a(), "x", "node-a", 0, 100);
  auto y = must_acquire(nodes.a(), "y", "node-a", 0, 100);
  auto z = must_acquire(nodes.a(), "z", "node-a", 0, 100);
  REQUIRE((x.granted() && y.granted() && z.granted()));

  // y expires and is taken over; z is released; x is renewed past its first expiry.
  REQUIRE(must_acquire(nodes.b(), "y", "node-b", 100, 300).granted());
  REQUIRE(nodes.a().release("z", z.token).ok());
  std::vector<HeldLease> held{{"x", x.token}, {"y", y.token}, {"z", z.token}};
  auto lost = nodes.a().renew("node-a", held, 500);
  REQUIRE(lost.ok());
  std::sort(lost.value().begin(), lost.value().end());
  CHECK(lost.value() == std::vector<std::string>{"y", "z"});
  auto refused = must_acquire(nodes.b(), "x", "node-b", 400, 600);
  CHECK_FALSE(refused.granted());
  REQUIRE(refused.holder);
  CHECK(refused.holder->expires_ms == 500);

  // Renewing a lease that expired but that nobody took keeps it: its token still fences.
  auto kept = nodes.a().renew("node-a", std::vector<HeldLease>{{"x", x.token}}, 900);
  REQUIRE(kept.ok());
  CHECK(kept.value().empty());
  WriteBatch w;
  w.put("x/k", "v");
  CHECK(nodes.first->commit_leased(w, "x", x.token).ok());
  // Another node cannot renew what it does not hold.
  auto foreign = nodes.b().renew("node-b", std::vector<HeldLease>{{"x", x.token}}, 5000);
  REQUIRE(foreign.ok());
  CHECK(foreign.value() == std::vector<std::string>{"x"});
  CHECK(nodes.b().holder("x").value()->expires_ms == 900);
}

inline void node_records(const Factory& f, bool shared) {
  ScratchDir dir;
  TwoNodes nodes(f, dir.path(), shared);
  REQUIRE(nodes.a().announce(NodeRecord{"node-a", "http://a", 10}).ok());
  REQUIRE(nodes.b().announce(NodeRecord{"node-b", "http://b", 11}).ok());
  REQUIRE(nodes.a().announce(NodeRecord{"node-a", "http://a2", 20}).ok());
  auto all = nodes.b().nodes();
  REQUIRE(all.ok());
  CHECK(all.value() == std::vector<NodeRecord>{{"node-a", "http://a2", 20}, {"node-b", "http://b", 11}});
  CHECK(nodes.a().announce(NodeRecord{"", "http://x", 1}).error().code == ErrorCode::invalid_argument);

  // Retiring takes the node's leases with it: another node may take them at once.
  auto held = must_acquire(nodes.b(), "obj", "node-b", 0, 1000);
  REQUIRE(held.granted());
  REQUIRE(nodes.b().retire("node-b").ok());
  CHECK(nodes.a().nodes().value() == std::vector<NodeRecord>{{"node-a", "http://a2", 20}});
  auto taken = must_acquire(nodes.a(), "obj", "node-a", 1, 1000);
  REQUIRE(taken.granted());
  WriteBatch w;
  w.put("obj/k", "v");
  CHECK(nodes.second->commit_leased(w, "obj", held.token).error().code == ErrorCode::fenced);
}

// Node a commits increments of one key under its lease while node b takes the lease over:
// every commit a saw acknowledged is visible to b, and none lands after b's grant.
inline void takeover_while_committing(const Factory& f, bool shared) {
  ScratchDir dir;
  TwoNodes nodes(f, dir.path(), shared);
  auto a = must_acquire(nodes.a(), "ctr", "node-a", 0, 100);
  REQUIRE(a.granted());
  std::atomic<long> acked{0};
  std::atomic<bool> started{false};
  std::string failure;
  std::thread writer([&] {
    for (long i = 1; i < 1'000'000; ++i) {
      WriteBatch w;
      w.put("ctr/n", std::to_string(i));
      auto r = nodes.first->commit_leased(w, "ctr", a.token);
      if (!r.ok()) {
        if (r.error().code != ErrorCode::fenced) failure = r.error().describe();
        return;
      }
      acked.store(i);
      started.store(true);
    }
  });
  while (!started.load()) std::this_thread::yield();
  auto b = must_acquire(nodes.b(), "ctr", "node-b", 100, 200);
  REQUIRE(b.granted());
  auto seen = nodes.second->get("ctr/n");
  writer.join();
  CHECK(failure.empty());
  REQUIRE(seen.ok());
  REQUIRE(seen.value());
  CHECK(std::stol(*seen.value()) == acked.load());
  CHECK(nodes.first->get("ctr/n").value() == seen.value());
}

}  // namespace dorm::storage::conformance

#define DORM_LEASE_CASE_(NAME, FACTORY, SHARED, TITLE, FN)                            \
  TEST_CASE("lease conformance [" NAME "]: " TITLE) {                                 \
    ::dorm::storage::conformance::FN(FACTORY, SHARED);                                \
  }

// SHARED: true when every open of one directory is another handle on the same data (a
// store processes share, such as PostgreSQL); false when the nodes share one handle.
#define DORM_LEASE_CONFORMANCE(NAME, FACTORY, SHARED)                                       \
  DORM_LEASE_CASE_(NAME, FACTORY, SHARED, "grants, refusals and take-over",                 \
                   grants_refusals_and_takeover)                                           \
  DORM_LEASE_CASE_(NAME, FACTORY, SHARED, "fenced commits apply nothing", fenced_commits)   \
  DORM_LEASE_CASE_(NAME, FACTORY, SHARED, "renewals report lost leases", renewals)          \
  DORM_LEASE_CASE_(NAME, FACTORY, SHARED, "node records", node_records)                     \
  DORM_LEASE_CASE_(NAME, FACTORY, SHARED, "take-over while the old holder commits",         \
                   takeover_while_committing)
