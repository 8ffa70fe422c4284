// Child process for the crash test: commits 1,000-key batches to a store forever,
// printing `begin N` before and `ack N` after each commit, until it is killed.
// PAUSE_MS (default 0) is a pause after each commit, for tests that read beside it.
//
//   crash_writer URI FIRST_BATCH [PAUSE_MS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "dorm/storage/open.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: crash_writer URI FIRST_BATCH [PAUSE_MS]\n");
    return 2;
  }
  auto backend = dorm::storage::open_backend(argv[1]);
  if (!backend) {
    std::fprintf(stderr, "crash_writer: %s\n", backend.error().describe().c_str());
    return 1;
  }
  long pause_ms = argc == 4 ? std::atol(argv[3]) : 0;
  std::string value(100, 'x');
  for (long n = std::atol(argv[2]);; ++n) {
    dorm::storage::WriteBatch batch;
    char key[64];
    for (int i = 0; i < 1000; ++i) {
      std::snprintf(key, sizeof key, "batch/%010ld/%04d", n, i);
      batch.put(key, value);
    }
    std::printf("begin %ld\n", n);
    std::fflush(stdout);
    auto ok = (*backend)->commit(batch);
    if (!ok) {
      std::fprintf(stderr, "crash_writer: %s\n", ok.error().describe().c_str());
      return 1;
    }
    std::printf("ack %ld\n", n);
    std::fflush(stdout);
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
}
