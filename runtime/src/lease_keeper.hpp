// LeaseKeeper — keeps a scale-out node's leases alive (RuntimeOptions::node).
//
// Every `renew_every` it announces the node (its heartbeat and address in the store's node
// records) and renews, in one call, the lease of every object this runtime holds active.
// The store answers with the leases that are no longer this node's — it failed to renew in
// time and another node took the object over, or the lease was released under it — and
// each of those activations is reset at once (LeaseLost): its next commit would be refused
// anyway, and it must not answer from memory what another node now owns. A renewal that
// fails (the store unreachable) is logged and tried again at the next tick; leases that
// expire meanwhile stay this node's until someone takes them over.
#pragma once

#include <caf/event_based_actor.hpp>

#include "runtime_impl.hpp"

namespace dorm::detail {

class LeaseKeeper : public caf::event_based_actor {
 public:
  LeaseKeeper(caf::actor_config& cfg, Runtime::Impl* impl);
  caf::behavior make_behavior() override;
  const char* name() const override { return "dorm.lease-keeper"; }

 private:
  void tick();

  Runtime::Impl* impl_;
};

}  // namespace dorm::detail
