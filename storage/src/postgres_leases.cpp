// PostgresBackend as a LeaseTable: dorm_leases, dorm_nodes and the fencing-token sequence
// (postgres_backend.hpp says how they fit; the statements are prepared in connect_one).
#include <algorithm>

#include "postgres_internal.hpp"

namespace dorm::storage {
namespace {

using namespace pg;

Error invalid(std::string what) { return Error{ErrorCode::invalid_argument, std::move(what)}; }

std::int64_t int8_cell(const PGresult* r, int row, int column) {
  return static_cast<std::int64_t>(int8_value(PQgetvalue(r, row, column)));
}

// The first row of a lease_holder result.
LeaseHolder holder_row(const PGresult* h) {
  return LeaseHolder{cell(h, 0, 0), cell(h, 0, 1), int8_value(PQgetvalue(h, 0, 2)),
                     int8_cell(h, 0, 3), int8_cell(h, 0, 4)};
}

}  // namespace

Result<LeaseGrant> PostgresBackend::acquire(std::string_view object, std::string_view node,
                                            std::int64_t now_ms, std::int64_t expires_ms) {
  if (object.empty() || node.empty() || expires_ms <= now_ms) {
    return invalid("a lease needs an object, a node and an expiry after now");
  }
  const std::string now = int8_binary(static_cast<std::uint64_t>(now_ms));
  const std::string until = int8_binary(static_cast<std::uint64_t>(expires_ms));
  return read([&](Connection& c) -> Result<LeaseGrant> {
    // Refused, then the holder released it before we looked: ask again (bounded; each
    // round some other node made progress).
    for (int round = 0; round < 8; ++round) {
      auto r = c.run("lease_acquire", {store_, object, node, now, until}, {},
                     description_ + ": taking a lease");
      if (!r) return std::move(r).error();
      if (PQntuples(r->get()) == 1) return LeaseGrant{int8_value(PQgetvalue(r->get(), 0, 0)), {}};
      auto held = c.run("lease_holder", {store_, object}, {}, description_ + ": reading a lease");
      if (!held) return std::move(held).error();
      if (PQntuples(held->get()) == 1) {
        const PGresult* h = held->get();
        return LeaseGrant{0, holder_row(h)};
      }
    }
    return Error{ErrorCode::busy, description_ + ": the lease of an object kept changing hands"};
  });
}

Result<std::vector<std::string>> PostgresBackend::renew(std::string_view node,
                                                        std::span<const HeldLease> held,
                                                        std::int64_t expires_ms) {
  if (held.empty()) return std::vector<std::string>{};
  std::vector<std::string_view> objects;
  std::vector<std::string> token_values;
  for (const auto& h : held) {
    objects.push_back(h.object);
    token_values.push_back(int8_binary(h.token));
  }
  const std::string object_array = bytea_array(objects);
  const std::string tokens = binary_array({token_values.begin(), token_values.end()}, kInt8Oid);
  const std::string until = int8_binary(static_cast<std::uint64_t>(expires_ms));
  return read([&](Connection& c) -> Result<std::vector<std::string>> {
    auto r = c.run("lease_renew", {store_, node, object_array, tokens, until}, {},
                   description_ + ": renewing leases");
    if (!r) return std::move(r).error();
    std::vector<std::string> kept;
    for (int row = 0; row < PQntuples(r->get()); ++row) kept.push_back(cell(r->get(), row, 0));
    std::sort(kept.begin(), kept.end());
    std::vector<std::string> lost;
    for (const auto& h : held) {
      if (!std::binary_search(kept.begin(), kept.end(), h.object)) lost.push_back(h.object);
    }
    return lost;
  });
}

Result<void> PostgresBackend::release(std::string_view object, std::uint64_t token) {
  const std::string t = int8_binary(token);
  return read([&](Connection& c) -> Result<void> {
    auto r = c.run("lease_release", {store_, object, t}, {}, description_ + ": releasing a lease");
    if (!r) return std::move(r).error();
    return {};
  });
}

Result<std::optional<LeaseHolder>> PostgresBackend::holder(std::string_view object) {
  return read([&](Connection& c) -> Result<std::optional<LeaseHolder>> {
    auto r = c.run("lease_holder", {store_, object}, {}, description_ + ": reading a lease");
    if (!r) return std::move(r).error();
    if (PQntuples(r->get()) == 0) return std::optional<LeaseHolder>{};
    return std::optional<LeaseHolder>{holder_row(r->get())};
  });
}

Result<void> PostgresBackend::announce(const NodeRecord& node) {
  if (node.node.empty()) return invalid("a node needs an id");
  const std::string at = int8_binary(static_cast<std::uint64_t>(node.heartbeat_ms));
  return read([&](Connection& c) -> Result<void> {
    auto r = c.run("node_announce", {store_, node.node, node.address, at}, {},
                   description_ + ": announcing node " + node.node);
    if (!r) return std::move(r).error();
    return {};
  });
}

Result<std::vector<NodeRecord>> PostgresBackend::nodes() {
  return read([&](Connection& c) -> Result<std::vector<NodeRecord>> {
    auto r = c.run("node_list", {store_}, {}, description_ + ": listing nodes");
    if (!r) return std::move(r).error();
    std::vector<NodeRecord> out;
    for (int row = 0; row < PQntuples(r->get()); ++row) {
      out.push_back(NodeRecord{cell(r->get(), row, 0), cell(r->get(), row, 1),
                               int8_cell(r->get(), row, 2)});
    }
    return out;
  });
}

Result<void> PostgresBackend::retire(std::string_view node) {
  return read([&](Connection& c) -> Result<void> {
    auto r = c.run("node_retire", {store_, node}, {}, description_ + ": retiring a node");
    if (!r) return std::move(r).error();
    return {};
  });
}

}  // namespace dorm::storage
