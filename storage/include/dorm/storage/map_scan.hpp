// scan_ordered_map — Backend::scan over a std::map of byte strings.
//
// For backends that keep their keys in an ordered map in memory (dorm's MemoryBackend,
// the example AppendLogBackend): validates the options, applies start_after, the range,
// the direction and the limit exactly as Backend::scan promises. The caller holds
// whatever lock makes the map stable for the duration of the call.
#pragma once

#include <vector>

#include "dorm/result.hpp"
#include "dorm/storage/backend.hpp"

namespace dorm::storage {

template <class Map>
Result<std::vector<KeyValue>> scan_ordered_map(const Map& data, const ScanOptions& options) {
  if (auto ok = options.validate(); !ok) return std::move(ok).error();
  ScanOptions::Bounds bounds = options.bounds();
  std::vector<KeyValue> out;
  if (bounds.empty()) return out;
  auto full = [&] { return options.limit != 0 && out.size() >= options.limit; };
  auto first = data.lower_bound(bounds.lower);
  auto last = bounds.upper ? data.lower_bound(*bounds.upper) : data.end();
  if (!options.reverse) {
    for (auto it = first; it != last && !full(); ++it) out.push_back({it->first, it->second});
  } else {
    for (auto it = last; it != first && !full();) {
      --it;
      out.push_back({it->first, it->second});
    }
  }
  return out;
}

}  // namespace dorm::storage
