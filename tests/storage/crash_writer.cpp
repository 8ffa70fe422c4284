// Child process for the crash test: commits 1,000-key batches to a store forever,
// printing `begin N` before and `ack N` after each commit, until it is killed.
//
//   crash_writer URI FIRST_BATCH
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dorm/storage/open.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_writer URI FIRST_BATCH\n");
    return 2;
  }
  auto backend = dorm::storage::open_backend(argv[1]);
  if (!backend) {
    std::fprintf(stderr, "crash_writer: %s\n", backend.error().describe().c_str());
    return 1;
  }
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
  }
}
