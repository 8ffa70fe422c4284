// numbered("obj-", 7) == "obj-7". Written out because `"obj-" + std::to_string(n)` trips
// GCC 12's false -Wrestrict / -Wstringop-overflow in optimised builds.
#pragma once

#include <string>
#include <string_view>

namespace dorm::testing {

inline std::string numbered(std::string_view prefix, long long n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

}  // namespace dorm::testing
