// Small helpers shared by the `dorm bench` programs: timing, medians, percentiles, RSS.
#pragma once

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace dorm::bench {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The nearest-rank percentile (0 < p <= 100) of `v`: the smallest value that at least p %
// of the values do not exceed.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// Resident set size in bytes, read from /proc/self/statm after returning free heap pages
// to the system (malloc_trim), so that memory freed earlier does not count.
inline double resident_bytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Ends the process when something the benchmark waits for never comes. Throwing instead
// would unwind through actors that still hold pointers to the waiting frame.
[[noreturn]] inline void give_up_waiting(const char* what) {
  std::fprintf(stderr, "benchmark failed: %s\n", what);
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace dorm::bench
