// `dorm torture`: a SIGKILL crash loop under load. It starts `dorm serve --fixtures testing`
// on loopback over a fresh store, runs concurrent sessions through a seeded mix of
// acknowledged writes (ledger_append), slow calls (sleep), dropped-and-resumed streams and
// new sessions, SIGKILLs the server at seeded moments and restarts it on the same store,
// and after every restart checks what each client saw against what each session stored
// (ledger_check.hpp): nothing acknowledged lost, nothing twice, no call left hanging, no
// session gone. docs/reliability.md explains the checks and records a run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dorm/result.hpp"

namespace dorm::torture {

struct TortureOptions {
  int cycles = 200;   // kills, each followed by a restart and a check
  int sessions = 64;  // concurrent sessions (lanes); new sessions are opened on top
  std::uint64_t seed = 1;
  std::string dorm;  // the server binary; empty: this program
  // The store of every server of the run; {dir} stands for a fresh temporary directory.
  std::string storage = "rocksdb:{dir}/store";
  std::string format = "text";  // text | json
  std::int64_t retry_ms = 500;  // the servers' --retry-ms: R, the clients' reconnect delay
  double time_limit_s = 3600;   // the run stops after the cycle that passes it
};

// `storage` with {dir} replaced by `dir`, checked as a storage URI that names a store on
// disk. Errors: invalid_argument when the template has no {dir} or does not parse (memory:,
// which takes no path, cannot name {dir}).
Result<std::string> storage_uri_for(std::string_view storage, std::string_view dir);

// Runs it: a progress line per cycle on stderr, the table on stdout. Returns the exit
// status: 0 when every check held, 1 when one did not or the run stopped early (a server
// that did not start, the time limit, a bad option), 130 when interrupted.
int run_torture(const TortureOptions& options);

}  // namespace dorm::torture
