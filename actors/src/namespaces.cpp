#include "dorm/actors/namespaces.hpp"

#include <array>

namespace dorm::actors {

std::span<const std::string_view> builtin_namespaces() {
  static constexpr std::array<std::string_view, 2> kAll{kMcpSessionNamespace, kExecutionOwnerNamespace};
  return kAll;
}

}  // namespace dorm::actors
