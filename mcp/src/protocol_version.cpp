#include "dorm/mcp/protocol_version.hpp"

#include <algorithm>

namespace dorm::mcp {

bool is_supported(std::string_view version) {
  return std::find(kSupportedProtocolVersions.begin(), kSupportedProtocolVersions.end(), version) !=
         kSupportedProtocolVersions.end();
}

std::string_view negotiate(std::string_view requested) {
  auto found =
      std::find(kSupportedProtocolVersions.begin(), kSupportedProtocolVersions.end(), requested);
  return found != kSupportedProtocolVersions.end() ? *found : kLatestProtocolVersion;
}

bool allows_batch(std::string_view version) {
  return version == "2025-03-26";
}

bool wants_priming(std::string_view version) {
  // Revisions are dates written YYYY-MM-DD, so for supported ones text order is date order.
  return is_supported(version) && version >= std::string_view("2025-11-25");
}

std::string supported_versions_list() {
  std::string list;
  for (std::string_view v : kSupportedProtocolVersions) {
    if (!list.empty()) list += ", ";
    list += v;
  }
  return list;
}

}  // namespace dorm::mcp
