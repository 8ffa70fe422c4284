// `dorm bench engine`: the engine pool against bare V8 and the original system's engine shape
// (QuickJS in WebAssembly, ../shared/peers/quickjs-engine), interleaved (engine_bench.cpp).
#pragma once

#include <string>

namespace dorm::bench {

struct EngineBenchOptions {
  int rounds = 5;             // interleaved rounds; each figure is the median over them
  int trivial_runs = 500;     // `return 1` executions per subject and round
  int tool_runs = 50;         // 100-tool-call executions per subject and round
  std::string quickjs_dir;    // an installed copy of the QuickJS peer (npm install done); empty: skip it
  std::string worker_path;    // dorm-engine-worker; empty: next to this program
};

int run_engine_bench(const EngineBenchOptions& options);

}  // namespace dorm::bench
