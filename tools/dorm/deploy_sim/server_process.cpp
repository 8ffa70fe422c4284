#include "server_process.hpp"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>

#include "notifier.hpp"

namespace dorm::deploy_sim {

namespace asio = boost::asio;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kStderrTail = 40;     // lines kept for describe()
constexpr std::size_t kMaxLine = 1u << 20;  // a longer line ends the reading
constexpr auto kExitPoll = std::chrono::milliseconds(5);
constexpr std::string_view kReadyPrefix = "listening on ";
// Every child started and not reaped yet (the I/O thread alone touches it).
std::set<pid_t>& unreaped() {
  static std::set<pid_t> pids;
  return pids;
}

void reap_blocking(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  unreaped().erase(pid);
}

}  // namespace

struct ServerProcess::Output {
  explicit Output(asio::any_io_executor executor)
      : out(executor), err(executor), changed(executor) {}

  asio::posix::stream_descriptor out;
  asio::posix::stream_descriptor err;
  Notifier changed;
  std::vector<std::string> stdout_lines;
  std::deque<std::string> stderr_tail;
  std::set<std::string> events;
  int open_pipes = 2;

  void add(std::string line, bool from_stderr) {
    if (!from_stderr) {
      stdout_lines.push_back(std::move(line));
    } else {
      rapidjson::Document doc;
      doc.Parse(line.c_str());
      if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("event") &&
          doc["event"].IsString()) {
        events.insert(doc["event"].GetString());
      }
      stderr_tail.push_back(std::move(line));
      if (stderr_tail.size() > kStderrTail) stderr_tail.pop_front();
    }
    changed.notify();
  }
};

namespace {

asio::awaitable<void> read_lines(std::shared_ptr<ServerProcess::Output> output, bool from_stderr);

// The child's side of the fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(pid_t parent, int out_fd, int err_fd, const char* exe,
                             char* const* argv) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  if (close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < 65536; ++fd) close(fd);
  }
  execv(exe, argv);
  _exit(127);
}

}  // namespace

Result<std::unique_ptr<ServerProcess>> ServerProcess::start(asio::any_io_executor executor,
                                                            const std::string& exe,
                                                            const std::vector<std::string>& args) {
  std::vector<std::string> owned{exe};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Error{ErrorCode::io_error, std::strerror(errno)};
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return Error{ErrorCode::io_error, std::strerror(errno)};
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) exec_child(parent, out[1], err[1], exe.c_str(), argv.data());
  int fork_errno = errno;
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    return Error{ErrorCode::io_error, std::string("fork: ") + std::strerror(fork_errno)};
  }
  unreaped().insert(pid);
  auto output = std::make_shared<Output>(executor);
  output->out.assign(out[0]);
  output->err.assign(err[0]);
  asio::co_spawn(executor, read_lines(output, false), asio::detached);
  asio::co_spawn(executor, read_lines(output, true), asio::detached);
  return std::unique_ptr<ServerProcess>(new ServerProcess(pid, std::move(output)));
}

namespace {

asio::awaitable<void> read_lines(std::shared_ptr<ServerProcess::Output> output, bool from_stderr) {
  auto& pipe = from_stderr ? output->err : output->out;
  asio::streambuf buffer(kMaxLine);
  for (;;) {
    auto [ec, n] = co_await asio::async_read_until(pipe, buffer, '\n', kTuple);
    if (ec == asio::error::not_found) {  // an overlong line: drop it, keep the pipe drained
      buffer.consume(buffer.size());
      continue;
    }
    if (ec) break;
    auto data = buffer.data();
    std::string line(asio::buffers_begin(data), asio::buffers_begin(data) + (n - 1));
    buffer.consume(n);
    output->add(std::move(line), from_stderr);
  }
  --output->open_pipes;
  output->changed.notify();
}

}  // namespace

ServerProcess::~ServerProcess() {
  if (!status_ && unreaped().contains(pid_)) {
    ::kill(pid_, SIGKILL);
    reap_blocking(pid_);
  }
  boost::system::error_code ignored;
  output_->out.close(ignored);
  output_->err.close(ignored);
}

void ServerProcess::signal(int signal_number) {
  if (!status_ && unreaped().contains(pid_)) ::kill(pid_, signal_number);
}

bool ServerProcess::poll_exit() {
  if (status_) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    status_ = status;
    unreaped().erase(pid_);
  }
  return status_.has_value();
}

int ServerProcess::kill_all() {
  std::set<pid_t> pids = unreaped();
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  for (pid_t pid : pids) reap_blocking(pid);
  return static_cast<int>(pids.size());
}

asio::awaitable<std::optional<std::uint16_t>> ServerProcess::ready(TimePoint deadline) {
  auto output = output_;
  auto line_at = [&]() -> const std::string* {
    for (const auto& l : output->stdout_lines)
      if (l.starts_with(kReadyPrefix)) return &l;
    return nullptr;
  };
  co_await output->changed.until([&] { return line_at() || output->open_pipes == 0; }, deadline);
  const std::string* line = line_at();
  if (!line) co_return std::nullopt;
  auto url = boost::urls::parse_uri(std::string_view(*line).substr(kReadyPrefix.size()));
  if (!url || !url->has_port()) co_return std::nullopt;
  co_return url->port_number();
}

asio::awaitable<bool> ServerProcess::logged(std::string_view event, TimePoint deadline) {
  auto output = output_;
  std::string name(event);
  co_await output->changed.until(
      [&] { return output->events.contains(name) || output->open_pipes == 0; }, deadline);
  co_return output->events.contains(name);
}

asio::awaitable<std::optional<int>> ServerProcess::exited(TimePoint deadline) {
  while (!poll_exit()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) co_return std::nullopt;
    co_await sleep_until(std::min<TimePoint>(now + kExitPoll, deadline));
  }
  co_return status_;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

Result<std::string> server_binary(const std::string& given) {
  std::error_code ec;
  std::string path =
      given.empty() ? std::filesystem::read_symlink("/proc/self/exe", ec).string() : given;
  if (ec) return Error{ErrorCode::io_error, "cannot find this program: " + ec.message()};
  if (access(path.c_str(), X_OK) != 0)
    return Error{ErrorCode::invalid_argument, "--dorm " + path + ": not an executable file"};
  return path;
}

Result<std::filesystem::path> make_temp_dir(std::string_view prefix) {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec) return Error{ErrorCode::io_error, "no temporary directory: " + ec.message()};
  std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    return Error{ErrorCode::io_error, "cannot create a directory under " + base.string()};
  return std::filesystem::path(pattern);
}

std::string ServerProcess::describe() const {
  std::string out = "dorm serve (pid " + std::to_string(pid_) + ", " +
                    (status_ ? describe_wait_status(*status_) : std::string("running")) + ")";
  if (!output_->stderr_tail.empty()) {
    out += "; its last log lines:";
    for (const auto& l : output_->stderr_tail) out += "\n  " + l;
  }
  return out;
}

}  // namespace dorm::deploy_sim
