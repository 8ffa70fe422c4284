// `dorm bench execute`: code mode's `execute` and `resume` in a session, in process, against
// a plain `tools/call` and a live execution of the same code (execute_bench.cpp).
#pragma once

#include <string>

namespace dorm::bench {

struct ExecuteBenchOptions {
  std::string dir;    // working directory for the database (a temporary one when empty)
  int rounds = 5;     // interleaved rounds; each figure is the median over them
  int calls = 500;    // sequential calls per subject and round (round trips; resumes)
  int paused = 1000;  // paused executions held at once for the memory figure
};

int run_execute_bench(const ExecuteBenchOptions& options);

}  // namespace dorm::bench
