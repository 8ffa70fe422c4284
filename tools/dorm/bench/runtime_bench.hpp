// `dorm bench runtime`: the runtime's own costs, against bare CAF where a baseline exists
// (see runtime_bench.cpp).
#pragma once

#include <string>
#include <vector>

namespace dorm::bench {

struct RuntimeBenchOptions {
  std::string dir;             // working directory for the databases (a temp dir when empty)
  int rounds = 5;              // each figure is the median over the rounds
  int workers = 2;             // CAF worker threads, for dorm and for bare CAF alike
  int in_flight = 100;         // requests outstanding at once (round trips, activation)
  int requests = 400'000;      // round trips per row, subject and round
  int idle_objects = 100'000;  // resident idle objects (memory)
  // The idle objects' storage cache bound (NamespaceOptions::storage_cache_bytes; 0 = none).
  std::size_t storage_cache_bytes = 1024 * 1024;
  int idle_sessions = 100'000;  // resident idle MCP sessions (sessions)
  int cold_objects = 100'000;  // objects on disk (cold activation)
  int cold_sample = 10'000;    // of which this many are activated per round
  int alarms = 1'000'000;      // alarms pending (lateness, re-arm at start)
  int alarm_rate = 10'000;     // alarms per second coming due in the measured window
  int alarm_window_s = 5;      // length of that window
  // Which parts to run: round-trips, memory, sessions, activation, alarms, storage-cache,
  // rearms (empty: all).
  std::vector<std::string> parts;
};

int run_runtime_bench(const RuntimeBenchOptions& options);
// The child process of the sessions part (`dorm bench session-memory`, hidden): measures
// options.idle_sessions idle sessions with options.storage_cache_bytes and prints
// "kib_per_session X".
int run_session_memory_child(const RuntimeBenchOptions& options);

}  // namespace dorm::bench
