// `dorm deploy-sim`: reproduces the incident table. It starts `dorm serve` processes on
// loopback over fresh stores, opens sessions with a client that follows the official
// TypeScript SDK's reconnect rules, keeps calls of the `sleep` fixture in flight, deploys
// (kill, term or rolling) in the middle of them, and prints per server variant and mode how
// many calls were answered, failed fast (and how fast) or hung until the client's timeout.
// With --virtual the same rows run in this process on virtual time (McpCluster; no
// processes, no sockets) and print the same table. docs/deploy-sim.md explains the options
// and the results.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"
#include "outcome.hpp"
#include "progress.hpp"

namespace dorm::deploy_sim {

struct DeploySimOptions {
  std::string variant = "reaper";  // no-fix | priming-only | reaper | all
  std::string mode = "kill";       // kill | term | rolling | all
  int sessions = 50;
  int calls_per_session = 2;
  int deploys = 3;
  std::string call_ms = "2000-8000";  // MIN-MAX, or one number
  double client_timeout_s = 120;
  double drain_timeout_s = 30;
  std::vector<std::int64_t> restart_gap_ms{0};  // a row for each
  std::vector<std::int64_t> retry_ms{500};      // a row for each
  std::uint64_t seed = 1;
  std::string format = "text";  // text | json | markdown
  std::string svg;              // write the timeline here when set
  std::string dorm;             // the server binary; empty: this program
  bool virtual_time = false;    // --virtual: McpCluster on virtual time, no processes
  // --storage: a postgres:// URI whose database holds the rows' store (the table
  // kDeploySimTable, emptied before each row); empty: a RocksDB store per row in a
  // temporary directory.
  std::string storage;
  int nodes = 1;              // --nodes: more than one needs --storage postgres://
  std::int64_t lease_ms = 0;  // --lease-ms: the nodes' lease (0: dorm serve's default)
};

// The table of the PostgreSQL database of --storage that deploy-sim's rows keep their store
// in. It is emptied before each row and after the last: never point deploy-sim at it for
// anything else.
inline constexpr const char* kDeploySimTable = "dorm_deploy_sim";

// The storage URI the servers of a run get for --storage `given` and `nodes`: the table
// kDeploySimTable, and shared=true for several nodes. Errors (invalid_argument, saying
// why): not a postgres:// URI, a `table` or `shared` option of its own, a malformed URI.
Result<std::string> row_storage(const std::string& given, int nodes);

// What the command line asks is possible: --nodes above 1 needs --storage, and --virtual
// takes neither. Errors: invalid_argument naming the options.
Result<void> check_options(const DeploySimOptions& options);

struct CallRange {
  std::int64_t min_ms = 0;
  std::int64_t max_ms = 0;
};

// "MIN-MAX" or "MS", milliseconds, 0 <= MIN <= MAX <= 24 h. Errors: invalid_argument
// saying what is wrong.
Result<CallRange> parse_call_ms(std::string_view text);

// The rows a run makes, in the order it makes them: for each mode, each variant, each
// retry hint, each restart gap (one row for rolling, which has no gap).
std::vector<RowKey> plan_rows(const DeploySimOptions& options);

// Every row `options` asks for, in plan_rows' order: real processes, or McpCluster on
// virtual time with options.virtual_time. Progress goes to `progress`. Errors: a malformed
// --call-ms, a server binary or directory that cannot be used, or the first row that
// failed (its label and why).
Result<std::vector<RowRun>> run_rows(const DeploySimOptions& options, Progress& progress);

// Runs it: progress on stderr, the table on stdout. Returns the exit status (0, 1 on a
// failure, which is logged, 130 when interrupted).
int run_deploy_sim(const DeploySimOptions& options);

}  // namespace dorm::deploy_sim
