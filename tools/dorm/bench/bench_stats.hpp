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
#include <iterator>
#include <sstream>
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

// The resident set of process `pid` in KiB (VmRSS of /proc/PID/status), as it is: another
// process's free heap cannot be trimmed from here. 0 when the process is gone.
inline long process_rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// User plus system CPU seconds of process `pid`, all its threads: fields 14 and 15 of
// /proc/PID/stat, counted after the parenthesised name (which may hold spaces).
inline double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 1));
  std::string skipped;
  for (int field = 3; field < 14; ++field) fields >> skipped;
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The machine's load averages over 1, 5 and 15 minutes, as /proc/loadavg has them: every
// benchmark prints them, since a busy machine moves every figure.
inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// Ends the process when something the benchmark waits for never comes. Throwing instead
// would unwind through actors that still hold pointers to the waiting frame.
[[noreturn]] inline void give_up_waiting(const char* what) {
  std::fprintf(stderr, "benchmark failed: %s\n", what);
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace dorm::bench
