#include "dorm/actors/namespaces.hpp"

#include <array>

namespace dorm::actors {

std::span<const std::string_view> builtin_namespaces() {
  static constexpr std::array<std::string_view, 1> kAll{kMcpSessionNamespace};
  return kAll;
}

}  // namespace dorm::actors
