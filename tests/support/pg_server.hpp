// A real PostgreSQL server for one test binary: initdb into a temporary directory, then
// `postgres` listening only on a Unix socket in that directory (no TCP port, so nothing to
// collide with), stopped by PID when the object goes. As root (CI), the server runs as
// the `postgres` user Debian's package creates, since PostgreSQL refuses to run as root.
//
// The server binaries come from DORM_PG_BIN, else Debian's /usr/lib/postgresql/15/bin
// (tools/bootstrap installs postgresql-15). Every wait is bounded.
#pragma once

#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dorm::testing {

class PgServer {
 public:
  static constexpr int kPort = 5432;  // names the socket file only

  PgServer() {
    const char* env = std::getenv("DORM_PG_BIN");
    bin_ = env && *env ? env : "/usr/lib/postgresql/15/bin";
    if (::access((bin_ + "/postgres").c_str(), X_OK) != 0) {
      throw std::runtime_error("no PostgreSQL server at " + bin_ +
                               " (run tools/bootstrap, or set DORM_PG_BIN)");
    }
    std::string pattern =
        (std::filesystem::temp_directory_path() / "dorm-pg-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (!pw) throw std::runtime_error("running as root and there is no postgres user");
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
      if (::chown(dir_.c_str(), uid_, gid_) != 0) throw std::runtime_error("chown failed");
    }
    int rc = run_and_wait({bin_ + "/initdb", "-D", data(), "-U", "dorm", "-A", "trust", "-E",
                           "UTF8", "--no-sync", "--no-instructions"},
                          std::chrono::seconds(120));
    if (rc != 0) throw std::runtime_error("initdb failed; see " + dir_ + "/server.log");
    start();
  }

  ~PgServer() {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // A dorm storage URI for database `postgres` as user `dorm`, ending in its query, so
  // callers append `&name=value`.
  std::string uri() const {
    return "postgres://dorm@/postgres?host=" + dir_ + "&port=" + std::to_string(kPort);
  }
  // The same, as libpq keyword/value connection info.
  std::string conninfo() const {
    return "host=" + dir_ + " port=" + std::to_string(kPort) + " user=dorm dbname=postgres";
  }
  pid_t pid() const { return pid_; }

  // Starts the server and waits until it accepts connections.
  void start() {
    pid_ = spawn({bin_ + "/postgres", "-D", data(), "-k", dir_, "-p", std::to_string(kPort),
                  "-c", "listen_addresses=", "-c", "max_connections=200"});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (PQping(conninfo().c_str()) != PQPING_OK) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("postgres exited at start; see " + dir_ + "/server.log");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("postgres did not accept connections within 60 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a bounded wait
    }
  }

  // Fast shutdown (SIGINT: running transactions are rolled back, sessions end), bounded;
  // SIGKILL if it does not go within 30 s.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGINT);
    if (!wait_exit(pid_, std::chrono::seconds(30))) {
      ::kill(pid_, SIGKILL);
      wait_exit(pid_, std::chrono::seconds(30));
    }
    pid_ = -1;
  }

  // Runs one SQL command as the superuser and returns the first column of its first row
  // (empty if none); throws with the server's message on failure.
  std::string sql(const std::string& command) const {
    PGconn* c = PQconnectdb(conninfo().c_str());
    std::string error;
    std::string value;
    if (PQstatus(c) != CONNECTION_OK) {
      error = PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, command.c_str());
      auto s = PQresultStatus(r);
      if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) error = PQresultErrorMessage(r);
      if (s == PGRES_TUPLES_OK && PQntuples(r) > 0) value = PQgetvalue(r, 0, 0);
      PQclear(r);
    }
    PQfinish(c);
    if (!error.empty()) throw std::runtime_error(command + ": " + error);
    return value;
  }

 private:
  std::string data() const { return dir_ + "/data"; }

  pid_t spawn(const std::vector<std::string>& argv) const {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::string log = dir_ + "/server.log";
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
      }
      if (uid_ != 0 && fd >= 0) (void)::fchown(fd, uid_, gid_);
      if (uid_ != 0 && (::setgid(gid_) != 0 || ::setuid(uid_) != 0)) ::_exit(126);
      // After the credential change, which would clear it: the server goes with the test.
      ::prctl(PR_SET_PDEATHSIG, SIGINT);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return pid;
  }

  int run_and_wait(const std::vector<std::string>& argv, std::chrono::seconds limit) const {
    pid_t pid = spawn(argv);
    int status = 0;
    if (!wait_exit(pid, limit, &status)) {
      ::kill(pid, SIGKILL);
      wait_exit(pid, std::chrono::seconds(10));
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static bool wait_exit(pid_t pid, std::chrono::seconds limit, int* status_out = nullptr) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (status_out) *status_out = status;
    return true;
  }

  std::string bin_;
  std::string dir_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  pid_t pid_ = -1;
};

}  // namespace dorm::testing
