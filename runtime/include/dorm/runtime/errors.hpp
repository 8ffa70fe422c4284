// Errors the runtime reports to senders, as CAF errors in the "dorm" category.
//
// Inside the runtime, failures are dorm::Result values; they become caf::error only at
// actor message boundaries: a reply that did not come, or a send that was refused.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "dorm/result.hpp"

namespace dorm {

enum class RuntimeErrc : std::uint8_t {
  object_reset = 1,   // the object was reset (a turn failed); this message was not handled
  overloaded = 2,     // the object's mailbox is full; the message was not accepted
  turn_failed = 3,    // this message's turn failed (its error says why); nothing committed
  invalid_id = 4,     // the id is malformed, forged or from another namespace
  unknown_namespace = 5,
  stopped = 6,        // the runtime is shutting down
  node_restarting = 7,  // the runtime holding this message crashed before handling it
  no_space = 8,       // the store's disk is full: this turn's commit was refused, nothing kept
  not_owner = 9,      // scale-out: another node holds this object's lease (owner_of says which)
};

const char* to_string(RuntimeErrc e);

// A caf::error in category "dorm"; `context` (e.g. a dorm::Error's message) is attached.
caf::error make_error(RuntimeErrc e, std::string context = {});

// True if `e` is the given dorm runtime error.
bool is(const caf::error& e, RuntimeErrc code);

// "dorm::object_reset: <context>" for runtime errors, CAF's rendering for any other.
std::string describe(const caf::error& e);

// Scale-out (RuntimeOptions::node): the node that holds an object's lease, as a not_owner
// error names it, so that a front end can send the request there.
struct OwnerInfo {
  std::string node;
  std::string address;  // as that node announced it; empty if it announced none
  std::int64_t expires_ms = 0;  // when its lease runs out unless renewed

  friend bool operator==(const OwnerInfo&, const OwnerInfo&) = default;
};
caf::error make_not_owner(const OwnerInfo& owner);
// The owner a not_owner error names; std::nullopt for any other error.
std::optional<OwnerInfo> owner_of(const caf::error& e);

// Renders errors of category "dorm" (registered with every runtime's actor system).
std::string render_runtime_error(std::uint8_t code, caf::atom_value, const caf::message& ctx);

}  // namespace dorm
