// ServerProcess: one `dorm serve` child of `dorm deploy-sim`, started, signalled and
// reaped by its PID.
//
// The child gets PR_SET_PDEATHSIG(SIGKILL), so it dies with deploy-sim even when
// deploy-sim itself is killed; it inherits no descriptor but its stdout and stderr
// (every other one is closed before exec: a client socket inherited by a server would
// keep that connection open after the client closed it). Its stdout is read for the ready
// line, its stderr (JSON log lines, `--log-format json`) for events and for the tail shown
// when something goes wrong.
#pragma once

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dorm/result.hpp"

namespace dorm::deploy_sim {

class ServerProcess {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Starts `exe` with `args` (argv[1..]). Errors: the pipes or the fork failed.
  static Result<std::unique_ptr<ServerProcess>> start(boost::asio::any_io_executor executor,
                                                      const std::string& exe,
                                                      const std::vector<std::string>& args);
  // A child still running is killed (SIGKILL) and reaped.
  ~ServerProcess();

  pid_t pid() const { return pid_; }

  // The port of its ready line (`listening on http://HOST:PORT/mcp`); unset when the
  // child exits first or `deadline` passes.
  boost::asio::awaitable<std::optional<std::uint16_t>> ready(TimePoint deadline);
  // Whether it logged a line with "event": `event` by `deadline` (false if it exited).
  boost::asio::awaitable<bool> logged(std::string_view event, TimePoint deadline);
  // Its wait status once it has exited and been reaped; unset at `deadline`.
  boost::asio::awaitable<std::optional<int>> exited(TimePoint deadline);

  void signal(int signal_number);
  bool reaped() const { return status_.has_value(); }

  // "pid N, exited 1" or "pid N, killed by signal 9", and the last lines it wrote to
  // stderr: for an error message.
  std::string describe() const;

  // SIGKILLs and reaps every child not reaped yet, whoever owns it: for a run that is
  // interrupted and exits without unwinding its coroutines. Returns how many there were.
  static int kill_all();

  struct Output;  // what the child wrote, read by coroutines of server_process.cpp

 private:
  ServerProcess(pid_t pid, std::shared_ptr<Output> output)
      : pid_(pid), output_(std::move(output)) {}
  bool poll_exit();

  pid_t pid_;
  std::shared_ptr<Output> output_;
  std::optional<int> status_;
};

// "exited N" or "killed by signal N" for a waitpid status.
std::string describe_wait_status(int status);

// The dorm binary to start servers from: `given` (a --dorm option), or this program when
// it is empty. Errors: invalid_argument when it is not an executable file.
Result<std::string> server_binary(const std::string& given);

// A new directory `<system temporary directory>/<prefix>-XXXXXX`, for the stores of the
// servers a run starts; the caller removes it.
Result<std::filesystem::path> make_temp_dir(std::string_view prefix);

}  // namespace dorm::deploy_sim
