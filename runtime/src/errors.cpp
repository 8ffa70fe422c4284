#include "dorm/runtime/errors.hpp"

#include <caf/atom.hpp>
#include <caf/message.hpp>
#include <caf/make_message.hpp>

namespace dorm {

const char* to_string(RuntimeErrc e) {
  switch (e) {
    case RuntimeErrc::object_reset: return "object_reset";
    case RuntimeErrc::overloaded: return "overloaded";
    case RuntimeErrc::turn_failed: return "turn_failed";
    case RuntimeErrc::invalid_id: return "invalid_id";
    case RuntimeErrc::unknown_namespace: return "unknown_namespace";
    case RuntimeErrc::stopped: return "stopped";
    case RuntimeErrc::node_restarting: return "node_restarting";
    case RuntimeErrc::no_space: return "no_space";
    case RuntimeErrc::not_owner: return "not_owner";
  }
  return "unknown";
}

caf::error make_error(RuntimeErrc e, std::string context) {
  if (context.empty()) return caf::error(static_cast<std::uint8_t>(e), caf::atom("dorm"));
  return caf::error(static_cast<std::uint8_t>(e), caf::atom("dorm"),
                    caf::make_message(std::move(context)));
}

caf::error make_not_owner(const OwnerInfo& owner) {
  std::string text = "the object's lease is held by node " + owner.node +
                     (owner.address.empty() ? std::string() : " (" + owner.address + ")");
  return caf::error(static_cast<std::uint8_t>(RuntimeErrc::not_owner), caf::atom("dorm"),
                    caf::make_message(std::move(text), owner.node, owner.address, owner.expires_ms));
}

std::optional<OwnerInfo> owner_of(const caf::error& e) {
  if (!is(e, RuntimeErrc::not_owner)) return std::nullopt;
  const auto& ctx = e.context();
  if (!ctx.match_elements<std::string, std::string, std::string, std::int64_t>()) return std::nullopt;
  return OwnerInfo{ctx.get_as<std::string>(1), ctx.get_as<std::string>(2),
                   ctx.get_as<std::int64_t>(3)};
}

bool is(const caf::error& e, RuntimeErrc code) {
  return e.category() == caf::atom("dorm") && e.code() == static_cast<std::uint8_t>(code);
}

std::string describe(const caf::error& e) {
  if (e.category() == caf::atom("dorm")) return render_runtime_error(e.code(), e.category(), e.context());
  return caf::to_string(e);
}

std::string render_runtime_error(std::uint8_t code, caf::atom_value, const caf::message& ctx) {
  std::string out = "dorm::";
  out += to_string(static_cast<RuntimeErrc>(code));
  if (ctx.size() > 0 && ctx.match_element<std::string>(0)) out += ": " + ctx.get_as<std::string>(0);
  return out;
}

}  // namespace dorm
