// LeaseTable — which process ("node") owns each object of a store several processes share.
//
// An optional capability of a Backend (Backend::leases()): a store that dorm processes on
// several machines serve together (PostgreSQL) keeps, beside the data, one lease per active
// object and a registry of the nodes. A node takes an object's lease before it activates
// the object, renews it while the object lives, and releases it when the activation ends.
// Each grant carries a fencing token, strictly greater than every token the table issued
// before; the object's writes go through Backend::commit_leased with that token, and a
// store refuses (`fenced`, nothing applied) a batch whose token is no longer the object's
// current one. So a node that lost its lease — paused past expiry, partitioned, taken over
// after it was presumed dead — can never write again for that object, whatever the clocks
// say: the token, not the expiry time, is what keeps one writer per object.
//
// Times are Unix milliseconds of the caller's clock. Expiry only decides when another node
// may take a lease over; nodes whose clocks disagree by more than a fraction of the lease
// duration take over early or late, never unsafely (docs/scale-out.md).
//
// Thread-safety: as Backend, every method may be called concurrently from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::storage {

// A node as it announced itself.
struct NodeRecord {
  std::string node;       // the node's id (`dorm serve --node-id`)
  std::string address;    // where other nodes reach it (`--advertise`), may be empty
  std::int64_t heartbeat_ms = 0;  // when it last announced itself

  friend bool operator==(const NodeRecord&, const NodeRecord&) = default;
};

// An object's current lease.
struct LeaseHolder {
  std::string node;
  std::string address;  // the holder's announced address, empty if it never announced one
  std::uint64_t token = 0;
  std::int64_t expires_ms = 0;
  std::int64_t heartbeat_ms = 0;  // the holder's last announcement; 0 if it never made one

  friend bool operator==(const LeaseHolder&, const LeaseHolder&) = default;
};

// What acquire() did: a new token, or the lease someone else holds.
struct LeaseGrant {
  std::uint64_t token = 0;            // non-zero when granted
  std::optional<LeaseHolder> holder;  // set when refused

  bool granted() const { return token != 0; }
};

// A lease a node holds, for renew().
struct HeldLease {
  std::string object;
  std::uint64_t token = 0;
};

class LeaseTable {
 public:
  virtual ~LeaseTable() = default;

  // Takes the lease of `object` for `node` until `expires_ms`, with a new token, when no
  // lease of it exists, when the current one expired (its expiry <= now_ms), or when the
  // current one is `node`'s own (an earlier activation there ended without releasing it:
  // a crash). Otherwise refuses and names the holder. Every grant's token is greater than
  // every token granted before, for any object.
  // Errors: invalid_argument for an empty object or node, or expires_ms <= now_ms.
  virtual Result<LeaseGrant> acquire(std::string_view object, std::string_view node,
                                     std::int64_t now_ms, std::int64_t expires_ms) = 0;

  // Moves the expiry of each lease in `held` that is still `node`'s with that token to
  // `expires_ms` (an expired lease nobody took over counts: its token still fences), in one
  // step, and returns the objects of those that are not any more (taken over, released):
  // their owner must stop them at once.
  virtual Result<std::vector<std::string>> renew(std::string_view node,
                                                 std::span<const HeldLease> held,
                                                 std::int64_t expires_ms) = 0;

  // Ends the lease of `object` if its token is `token`, so another node may take it at
  // once; a lease that moved on is left alone. Never fails for a missing lease.
  virtual Result<void> release(std::string_view object, std::uint64_t token) = 0;

  // The current lease of `object`, expired or not; std::nullopt when it has none.
  virtual Result<std::optional<LeaseHolder>> holder(std::string_view object) = 0;

  // Records that `node` is alive at `node.heartbeat_ms` and reachable at `node.address`.
  // Errors: invalid_argument for an empty node id.
  virtual Result<void> announce(const NodeRecord& node) = 0;

  // Every node that announced itself and did not retire, by id.
  virtual Result<std::vector<NodeRecord>> nodes() = 0;

  // `node` leaves: its record goes, and with it every lease it still holds.
  virtual Result<void> retire(std::string_view node) = 0;
};

}  // namespace dorm::storage
